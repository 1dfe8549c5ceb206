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
# # Differentiating a data pipeline over records and dicts
#
# A dataset of records goes through a feature stage that builds a dict, a model whose
# parameters are an attrs record holding a dict, and a loss. `nodegrad.grad` follows all
# of it, and the gradient comes back as the same record, with the same dict inside.
#
# Open with Jupyter and `jupytext` (`pip install jupytext`), or run as a script.

# %%
import attrs
import numpy as np

import nodegrad as ng
from nodegrad.data import SPECIES, load_iris

# %% [markdown]
# ## A dataset of records
# Each flower is a record with float measurements and static metadata (an id and a species).


# %%
@attrs.frozen
class Flower:
    sepal: np.ndarray  # (length, width) in cm
    petal: np.ndarray
    species: int
    ident: str


iris = load_iris()
flowers = [
    Flower(row[:2], row[2:], int(s), f"flower-{i}")
    for i, (row, s) in enumerate(zip(iris["features"], iris["species"], strict=True))
]
flowers[0]

# %% [markdown]
# ## Stage 1: records to a features dict
# The feature stage is ordinary Python over the records. The scaling of each feature
# group is a *parameter*, so its gradient flows through this stage.


# %%
def features(rows: list[Flower], scales: dict[str, object]) -> dict[str, object]:
    sepal = np.stack([r.sepal for r in rows])
    petal = np.stack([r.petal for r in rows])
    return {
        "sepal": (sepal - sepal.mean(axis=0)) * scales["sepal"],
        "petal": (petal - petal.mean(axis=0)) * scales["petal"],
        "ratio": petal[:, :1] / sepal[:, :1],
    }


# %% [markdown]
# ## Stage 2: a model whose parameters are a record holding a dict


# %%
@attrs.frozen
class Model:
    scales: dict  # per feature group: a learnable scale
    weights: dict  # per feature group: a (d, 3) weight matrix
    bias: np.ndarray
    classes: tuple = ng.field(static=True, default=SPECIES)

    def logits(self, feats: dict[str, object]) -> object:
        total = self.bias
        for name, w in self.weights.items():
            total = total + feats[name] @ w
        return total


def loss(model: Model, rows: list[Flower]) -> object:
    feats = features(rows, model.scales)
    labels = np.array([r.species for r in rows])
    return ng.cross_entropy(model.logits(feats), labels)


rng = np.random.default_rng(0)
model = Model(
    scales={"sepal": np.array(1.0), "petal": np.array(1.0)},
    weights={
        "sepal": rng.normal(0, 0.1, (2, 3)),
        "petal": rng.normal(0, 0.1, (2, 3)),
        "ratio": rng.normal(0, 0.1, (1, 3)),
    },
    bias=np.zeros(3),
)

# %% [markdown]
# ## The gradient is a `Model`
# Same class, same dict keys in the same order; the static `classes` field is `None`.

# %%
g = ng.grad(loss)(model, flowers)
assert type(g) is Model
assert list(g.weights) == ["sepal", "petal", "ratio"]
assert g.classes is None
{name: w.shape for name, w in g.weights.items()}, g.scales

# %% [markdown]
# ## Check it against central differences along a random direction

# %%
direction = ng.tree.map_floats(lambda w: rng.standard_normal(np.shape(w)), model)
eps = 1e-6
numeric = (
    float(loss(ng.tree.add(model, ng.tree.scale(direction, eps)), flowers))
    - float(loss(ng.tree.add(model, ng.tree.scale(direction, -eps)), flowers))
) / (2 * eps)
analytic = ng.tree.vdot(g, direction)
print(f"analytic {analytic:.8f}  numeric {numeric:.8f}")
assert abs(analytic - numeric) < 1e-6 * max(1.0, abs(numeric))

# %% [markdown]
# ## Train with Adam over the structured parameters

# %%
value_and_grad = ng.value_and_grad(loss)
state = None
history = []
for _ in range(200):
    value, g = value_and_grad(model, flowers)
    g, norm = ng.tree.clip_by_global_norm(g, 5.0)
    model, state = ng.optim.adam(model, g, state, lr=0.05)
    history.append(float(value))
print(f"loss {history[0]:.3f} -> {history[-1]:.3f}")
assert history[-1] < 0.5 * history[0]
print({name: float(s) for name, s in model.scales.items()})
