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
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

import nodegrad as ng
from nodegrad.data import SPECIES, load_iris
from nodegrad.testing import check_grads

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
type(g).__name__, {name: w.shape for name, w in g.weights.items()}, g.scales, g.classes

# %% tags=["remove-cell"]
assert type(g) is Model
assert list(g.weights) == ["sepal", "petal", "ratio"]
assert g.classes is None

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

# %% tags=["remove-cell"]
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
print({name: float(s) for name, s in model.scales.items()})

# %% tags=["remove-cell"]
assert history[-1] < 0.5 * history[0]

# %% [markdown]
# The loss over the 200 steps:

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(history, "C0-")
ax.set(xlabel="Adam step", ylabel="loss", title="training loss")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Per-example gradients with `vmap`
# Which flowers pull hardest on the fitted model? `ng.vmap(ng.grad(...))` gives every
# flower's gradient in one batched computation: a `Model` again, each array with one leading
# entry per flower. The loss is written for one flower; `in_axes` says the model is the same
# for all of them (`None`) and the features dict and the labels hold one row per flower (`0`).

# %%
feats = features(flowers, model.scales)  # plain arrays: the trained feature scaling
labels = np.array([f.species for f in flowers])


def flower_loss(model: Model, feats: dict[str, object], label: object) -> object:
    return ng.cross_entropy(model.logits(feats), label)


per_flower = ng.vmap(ng.grad(flower_loss), in_axes=(None, 0, 0))(model, feats, labels)
squares = [
    np.sum(np.reshape(leaf, (len(flowers), -1)) ** 2, axis=1)
    for _, leaf in [*ng.tree.tree_leaves_with_path(per_flower.weights), ("bias", per_flower.bias)]
]
norms = np.sqrt(np.sum(squares, axis=0))
type(per_flower).__name__, per_flower.weights["sepal"].shape, norms.shape

# %% tags=["remove-cell"]
assert type(per_flower) is Model and per_flower.weights["sepal"].shape == (150, 2, 3)
for i in (0, 70, 149):  # the same as one ng.grad call per flower
    one = ng.grad(flower_loss)(model, {k: v[i] for k, v in feats.items()}, labels[i])
    assert np.allclose(one.weights["petal"], per_flower.weights["petal"][i], rtol=1e-12, atol=1e-15)
mean = ng.grad(lambda m: np.mean(ng.vmap(flower_loss, in_axes=(None, 0, 0))(m, feats, labels)))(model)
assert np.allclose(mean.bias, per_flower.bias.mean(axis=0), rtol=1e-10, atol=1e-14)

# %% [markdown]
# The flowers with the largest gradients are the ones the model still gets wrong, most of
# them where versicolor and virginica overlap:

# %%
fig, ax = plt.subplots(figsize=(7, 3))
for k, name in enumerate(SPECIES):
    chosen = labels == k
    ax.scatter(np.flatnonzero(chosen), norms[chosen], s=12, color=f"C{k}", label=name)
ax.set(xlabel="flower", ylabel="gradient norm", title="per-example gradient norms (vmap of grad)")
ax.legend(frameon=False)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Group-by: per-species means feeding a loss
# Pipelines often reduce rows by group before the loss: per-user totals, per-class
# centroids. `ng.segment_mean(data, ids, num_segments)` averages the rows that share an
# integer id in one vectorised step, with no Python loop over groups. Its gradient sends
# each group's cotangent back to exactly that group's rows, divided by the group size.
#
# First, on plain arrays it is just the group-by mean:

# %%
measurements = iris["features"] - iris["features"].mean(axis=0)  # (150, 4), centred
species = iris["species"]  # (150,) integers in [0, 3): the segment ids
by_loop = np.stack([measurements[species == s].mean(axis=0) for s in range(len(SPECIES))])
ng.segment_mean(measurements, species, num_segments=len(SPECIES))

# %% tags=["remove-cell"]
assert np.allclose(ng.segment_mean(measurements, species, num_segments=len(SPECIES)), by_loop)


# %% [markdown]
# Now the means are of a *learned* quantity: a 2-D embedding `tanh(x @ projection)`.
# The loss is a Fisher-style ratio: how far flowers sit from their own species' mean
# (`centroids[species]` hands each row its group's mean back), over how far apart the
# species means are. Lowering it pulls each species together and the species apart;
# as a ratio it cannot be lowered by merely shrinking or stretching the embedding.


# %%
def fisher_ratio(projection: np.ndarray, rows: np.ndarray, groups: np.ndarray) -> object:
    embedded = np.tanh(rows @ projection)  # (150, 2)
    centroids = ng.segment_mean(embedded, groups, num_segments=len(SPECIES))  # (3, 2)
    within = np.mean((embedded - centroids[groups]) ** 2)
    gaps = centroids[:, None, :] - centroids[None, :, :]  # every pair of species
    between = np.sum(gaps**2) / (len(SPECIES) * (len(SPECIES) - 1))
    return within / between


projection = rng.normal(0, 0.5, (4, 2))
float(fisher_ratio(projection, measurements, species))

# %% [markdown]
# The gradient runs back through the group means and the per-row lookup of them:
# `check_grads` compares it with central differences (it raises if they disagree).
# Only the projection is differentiated; the rows and the integer ids pass as given.

# %%
check_grads(fisher_ratio, projection, measurements, species, argnums=0)
print("the gradient agrees with central differences")

# %% [markdown]
# ## Train the projection

# %%
ratio_and_grad = ng.value_and_grad(fisher_ratio)
state = None
ratios = []
for _ in range(100):
    ratio, g = ratio_and_grad(projection, measurements, species)
    projection, state = ng.optim.adam(projection, g, state, lr=0.05)
    ratios.append(float(ratio))
print(f"within / between {ratios[0]:.4f} -> {ratios[-1]:.4f}")
ng.segment_mean(np.tanh(measurements @ projection), species, num_segments=len(SPECIES))

# %% tags=["remove-cell"]
assert ratios[-1] < 0.25 * ratios[0]

# %% [markdown]
# ## The same kind of loss over row blocks, with Dask
# A loss that averages over rows can also run block by block: with the columns held as
# Dask arrays, `ng.parallel.value_and_grad` runs the loss on each block of rows as one
# task and adds the blocks' values and gradients, each block weighted by its share of the
# rows. Here a linear model predicts the petal length from the other three measurements,
# over blocks of 40, 40, 40 and 30 rows; the result equals the whole-batch gradient.


# %%
@attrs.frozen
class Linear:
    w: np.ndarray
    b: float


def petal_loss(model: Linear, batch: dict[str, object]) -> object:
    return np.mean((batch["x"] @ model.w + model.b - batch["y"]) ** 2)


columns = {"x": measurements[:, [0, 1, 3]], "y": measurements[:, 2]}
blocks = {k: da.from_array(v, chunks=((40, 40, 40, 30), *v.shape[1:])) for k, v in columns.items()}
model = Linear(np.zeros(3), 0.0)
value, g = ng.parallel.value_and_grad(petal_loss)(model, blocks)
whole_value, whole = ng.value_and_grad(petal_loss)(model, columns)
print("by blocks: ", g)
print("whole batch:", whole)

# %% tags=["remove-cell"]
assert np.isclose(value, whole_value) and np.allclose(g.w, whole.w) and np.isclose(g.b, whole.b)

# %% [markdown]
# ## Fit by maximum likelihood, with confidence intervals
# The same linear model, fitted to convergence instead of stepped: `ng.optim.minimize`
# hands the negative log-likelihood of a Gaussian model (its noise scale a parameter too,
# kept as a logarithm) to scipy's L-BFGS-B, and gives the answer back as a record. At the
# maximum, the inverse Hessian of the negative log-likelihood is the estimates' covariance:
# `ng.optim.covariance` computes it exactly and gives its standard errors in the record's
# structure.


# %%
@attrs.frozen
class Gaussian:
    w: np.ndarray
    b: float
    log_sigma: float


def negative_log_likelihood(p: Gaussian, x: np.ndarray, y: np.ndarray) -> object:
    residual = y - (x @ p.w + p.b)
    return len(y) * p.log_sigma + 0.5 * np.sum(residual**2) * np.exp(-2 * p.log_sigma)


fit = ng.optim.minimize(negative_log_likelihood, Gaussian(np.zeros(3), 0.0, 0.0), columns["x"], columns["y"])
errors = ng.optim.covariance(negative_log_likelihood, fit.x, columns["x"], columns["y"]).standard_errors()
print("converged:", fit.success, " estimates:", fit.x)
print("standard errors:", errors)

# %% tags=["remove-cell"]
# Least squares gives the same estimates, and the covariance sigma^2 (X^T X)^-1 (sigma^2 the
# mean squared residual, the maximum-likelihood estimate).
design = np.column_stack([columns["x"], np.ones(len(columns["y"]))])
coefficients, rss, *_ = np.linalg.lstsq(design, columns["y"], rcond=None)
sigma2 = float(rss[0]) / len(columns["y"])
exact = np.sqrt(np.diagonal(sigma2 * np.linalg.inv(design.T @ design)))
assert np.allclose(np.append(fit.x.w, fit.x.b), coefficients, atol=1e-5)
assert np.allclose(np.append(errors.w, errors.b), exact, rtol=1e-3)

# %% [markdown]
# Each coefficient with its 95% interval (1.96 standard errors either side). Every
# measurement's interval sits clear of zero; the intercept's is centred on zero, as it must
# be for centred measurements.

# %%
names = ["sepal length", "sepal width", "petal width", "intercept"]
estimates, half_widths = np.append(fit.x.w, fit.x.b), 1.96 * np.append(errors.w, errors.b)
fig, ax = plt.subplots(figsize=(6, 2.8))
ax.errorbar(estimates, np.arange(4), xerr=half_widths, fmt="o", color="C0", capsize=4)
ax.axvline(0.0, color="0.6", lw=1)
ax.set(yticks=np.arange(4), yticklabels=names, xlabel="effect on petal length (cm, centred)")
ax.set_title("maximum-likelihood estimates and 95% intervals")
ax.invert_yaxis()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## A spectral loss: fitting a signal's power spectrum
# Signal pipelines often compare spectra rather than samples. Here a signal `x` of 128
# samples, started from noise, is fitted so that its power spectrum `|rfft(x)|**2`
# matches that of a reference with two tones (5 and 12 cycles), compared on a log
# scale. `np.fft.rfft` of a traced value is differentiated exactly: the gradient of the
# half spectrum is the real part of a full FFT of the zero-padded cotangent. The loss
# only sees magnitudes, so the fit is free to choose the phases; the spectrum is what
# must match.

# %%
n = 128
t = np.arange(n) / n
reference = np.sin(2 * np.pi * 5 * t) + 0.5 * np.sin(2 * np.pi * 12 * t + 1.0)
target_power = np.abs(np.fft.rfft(reference)) ** 2


def spectral_loss(signal: np.ndarray) -> object:
    power = np.abs(np.fft.rfft(signal)) ** 2
    return np.mean((np.log1p(power) - np.log1p(target_power)) ** 2)


signal = 0.1 * np.random.default_rng(0).standard_normal(n)

# %% tags=["remove-cell"]
check_grads(spectral_loss, signal)

# %%
loss_and_grad = ng.value_and_grad(spectral_loss)
state, losses = None, []
for _ in range(300):
    loss, g = loss_and_grad(signal)
    signal, state = ng.optim.adam(signal, g, state, lr=0.05)
    losses.append(float(loss))
print(f"spectral loss {losses[0]:.4f} -> {losses[-1]:.6f}")

# %% tags=["remove-cell"]
assert losses[-1] < 1e-3 * losses[0]

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2))
frequencies = np.fft.rfftfreq(n, d=1 / n)
left.semilogy(frequencies, 1 + target_power, "k-", label="target")
left.semilogy(frequencies, 1 + np.abs(np.fft.rfft(signal)) ** 2, "C1--", label="fitted")
left.set(xlabel="cycles per window", ylabel="1 + power", title="power spectrum")
left.legend()
right.plot(t, reference, "k-", lw=1, label="reference")
right.plot(t, signal, "C1-", lw=1, label="fitted (other phases)")
right.set(xlabel="time", title="signal", ylim=(-1.9, 2.6))
right.legend(loc="upper center", ncol=2, frameon=False)
fig.tight_layout()
plt.show()
