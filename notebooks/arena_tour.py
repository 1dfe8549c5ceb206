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
assert all(parent < node.index for node in arena for parent in node.parents)
len(arena)

# %% [markdown]
# ## Inspect
# `arena[i]` is a read-only view of node `i`; in Jupyter the arena itself renders as a
# table (index, op, parents, shape, dtype, key path, value, gradient).

# %%
node = arena[loss.index]
print(node.op, node.parents, node.shape, node.dtype)
assert node.op == "mean"
table = arena._repr_html_()  # what Jupyter shows for `arena`
assert "<table" in table and "map_lookup" in table
arena  # noqa: B018  (a notebook cell's last expression is what it displays)

# %% [markdown]
# ## Draw
# `arena.to_svg()` lays the graph out in layers with nodegrad's own code — no graphviz —
# and groups a structured value with the reads of its entries.

# %%
try:
    from IPython.display import SVG
except ImportError:  # run as a plain script: show the size instead
    SVG = len

svg = arena.to_svg()
assert svg.startswith("<svg") and "map_lookup" in svg
SVG(svg)

# %% [markdown]
# ## Sweep back
# `backward` walks the indices from the output down, visiting only nodes between the
# requested inputs and the output. The gradient of a dict is a dict.

# %%
grads = arena.backward(loss, wrt=params)
print(ng.display.summary(grads))
print("nodes visited:", arena.last_visited, "of", len(arena))
assert set(grads) == {"w", "b"} and grads["w"].shape == (3, 2)

# %% [markdown]
# Calling `backward` again with another seed gives fresh results; nothing accumulates.

# %%
again = arena.backward(loss, wrt=params, seed=np.array(2.0))
np.testing.assert_allclose(again["w"], 2 * grads["w"])
