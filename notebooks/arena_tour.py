# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A tour of the arena
#
# Every differentiated computation is recorded in an `Arena`: a flat list of nodes, each
# an op, the indices of its parents and its forward value. This notebook builds one,
# inspects it, draws it and sweeps back through it.

# %%
import numpy as np

import nodegrad as ng

try:
    from IPython.display import SVG, display
except ImportError:  # run as a plain script: print instead
    SVG, display = len, print

# %% [markdown]
# ## Build
# Leaves come from `param` (differentiable) and `input` (data). Every operation on a
# traced value appends one node; the index order is already a topological order.

# %%
rng = np.random.default_rng(0)
arena = ng.Arena()
params = arena.param({"w": rng.normal(size=(3, 2)), "b": np.zeros(2)}, name="params")
x = arena.input(rng.normal(size=(4, 3)))
hidden = ng.tanh(x @ params["w"] + params["b"])
loss = ng.mean(hidden * hidden)
len(arena)

# %% tags=["remove-cell"]
assert all(parent < node.index for node in arena for parent in node.parents)

# %% [markdown]
# ## Inspect
# `arena[i]` is a read-only view of node `i`; in Jupyter the arena itself renders as a
# table at most 1,000 px wide (index, op, parents, shape and dtype, gradient, value, key
# path), with a source column giving the line of your code that recorded each node when
# the arena was made in a notebook.

# %%
node = arena[loss.index]
print(node.op, node.parents, node.shape, node.dtype)
display(arena)

# %% tags=["remove-cell"]
assert node.op == "mean"
table = arena._repr_html_()  # what Jupyter shows for `arena`
assert "<table" in table and "map_lookup" in table

# %% [markdown]
# ## Draw
# `arena.to_svg()` lays the graph out in layers with nodegrad's own code — no graphviz —
# and groups a structured value with the reads of its entries.

# %%
svg = arena.to_svg()
SVG(svg)

# %% tags=["remove-cell"]
assert svg.startswith("<svg") and "map_lookup" in svg

# %% [markdown]
# ## A loop, folded
# Thirty steps of a recurrent update make 184 nodes. The picture draws the loop's body
# once, in a stacked frame with the number of iterations; a value carried from one
# iteration to the next is marked ↻. `ng.display.graph` adds a disclosure below the
# picture that draws every iteration, and `ng.display.progress` shows how far the loop
# has got (a widget in Jupyter with the `display` extra, a text count without it).

# %%
loop = ng.Arena()
p = loop.param({"w": rng.normal(size=(4, 4)) * 0.5, "b": np.zeros(4)}, name="p")
h = loop.input(rng.normal(size=(2, 4)))
total = 0.0
for _ in ng.display.progress(range(30), desc="steps"):
    h = ng.tanh(h @ p["w"] + p["b"])
    total = total + ng.mean(h * h)
print(len(loop), "nodes")
display(ng.display.graph(loop))

# %% tags=["remove-cell"]
assert len(loop) == 184
assert 'data-count="29"' in ng.display.graph(loop)._repr_html_()

# %% [markdown]
# ## Sweep back
# `backward` walks the indices from the output down, visiting only nodes between the
# requested inputs and the output. The gradient of a dict is a dict.

# %%
grads = arena.backward(loss, wrt=params)
print(ng.display.summary(grads))
print("nodes visited:", arena.last_visited, "of", len(arena))

# %% tags=["remove-cell"]
assert set(grads) == {"w", "b"} and grads["w"].shape == (3, 2)

# %% [markdown]
# Calling `backward` again with another seed gives fresh results; nothing accumulates.

# %%
again = arena.backward(loss, wrt=params, seed=np.array(2.0))
print(np.allclose(again["w"], 2 * grads["w"]))

# %% tags=["remove-cell"]
np.testing.assert_allclose(again["w"], 2 * grads["w"])
