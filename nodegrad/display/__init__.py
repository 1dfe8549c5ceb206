"""Jupyter display: HTML tables of arenas, nodes and gradients, and SVG graph pictures.

Everything here is plain HTML and SVG built in Python: no graphviz or other system
binary is needed to see a graph in a notebook.
"""

from nodegrad.display.graph import graph
from nodegrad.display.progress import progress
from nodegrad.display.sources import notebook_nodes
from nodegrad.display.svg import arena_svg
from nodegrad.display.tables import arena_html, node_html, summary
from nodegrad.display.traces import trace_html
from nodegrad.engine.plugins import PLUGINS

__all__ = ["arena_html", "arena_svg", "graph", "node_html", "progress", "summary", "trace_html"]

# Arena._repr_html_, Node._repr_html_ and Arena.to_svg call these through the engine's sockets.
PLUGINS.arena_html = arena_html
PLUGINS.node_html = node_html
PLUGINS.arena_svg = arena_svg
PLUGINS.trace_html = trace_html
# An arena made in IPython or Jupyter notes the source line of each node for its table.
PLUGINS.user_nodes = notebook_nodes
