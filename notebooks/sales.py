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
# # Learning per-store effects from a table of sales
#
# A table of sales, one row per store and day, and a table of stores. The model: the units a
# store sells are its base demand, scaled by a per-store effect and by the price,
# `units ≈ exp(effect[store] - elasticity * price) * base`. The effects live in the store
# table itself, a pandas DataFrame, and the loss joins it to the sales with `merge` and
# averages the errors per region with `groupby`, in pandas' own spelling. `nodegrad.grad`
# differentiates it with the DataFrame as the argument, and the gradient is a DataFrame with
# the store table's index.
#
# Open with Jupyter and `jupytext` (`pip install jupytext`), or run as a script.

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import nodegrad as ng

# %% [markdown]
# ## The data
# Eight stores in three regions with true effects we will try to recover, and 400 days of
# sales at prices that vary from day to day (generated, with a fixed seed).

# %%
rng = np.random.default_rng(27)
stores = pd.DataFrame(
    {
        "store": [f"S{k}" for k in range(8)],
        "region": ["north", "north", "north", "south", "south", "east", "east", "east"],
        "effect": np.zeros(8),  # what we fit; the table itself is the parameter
    },
    index=[f"S{k}" for k in range(8)],
)
true_effect = pd.Series(rng.normal(0.0, 0.5, 8), index=stores.index)
true_elasticity, base = 0.8, 20.0

rows = 400
sales = pd.DataFrame(
    {
        "store": rng.choice(stores["store"].to_numpy(), rows),
        "price": rng.uniform(0.5, 3.0, rows).round(2),
    }
)
sales["units"] = rng.poisson(
    base * np.exp(true_effect[sales["store"]].to_numpy() - true_elasticity * sales["price"].to_numpy())
).astype(float)
sales.head()

# %% [markdown]
# ## The loss, written as pandas code
# `merge` brings each store's effect and region next to its sales, and `groupby` averages the
# squared errors per region, so that every region weighs the same however many sales it
# has. Run on plain DataFrames it is pandas; inside `ng.grad` the store table is an
# `ng.Frame`, with the same spelling.


# %%
def loss(params: dict, sales: pd.DataFrame) -> float:
    joined = params["stores"].merge(sales, on="store")
    predicted = base * np.exp(joined["effect"] - params["elasticity"] * joined["price"])
    errors = joined.assign(error=(predicted - joined["units"]) ** 2 / base)
    return np.mean(errors.groupby("region")[["error"]].mean()["error"])


params = {"stores": stores[["store", "region", "effect"]], "elasticity": np.float64(0.0)}
loss(params, sales)

# %% [markdown]
# The gradient of the store table is a DataFrame with its index and its float column; the
# static columns (the names, the regions) get none.

# %%
g = ng.grad(loss)(params, sales)
g["stores"].head(3)

# %%
assert list(g["stores"].columns) == ["effect"] and g["stores"].index.equals(stores.index)

# %% [markdown]
# ## Fitting by gradient descent
# Adam over the whole parameter structure: the table's effect column and the elasticity
# move, its other columns stay as they are.

# %%
step = ng.value_and_grad(loss)
state = None
history = []
for _ in range(300):
    value, g = step(params, sales)
    params, state = ng.optim.adam(params, g, state, lr=0.05)
    history.append(float(value))
print(f"loss {history[0]:.3f} -> {history[-1]:.3f}; elasticity {params['elasticity']:.3f} (true {true_elasticity})")

# %%
assert history[-1] < 0.25 * history[0]
assert abs(params["elasticity"] - true_elasticity) < 0.15

# %% [markdown]
# ## The fitted effects, as a table and a picture
# The effects are identified up to the base demand, so they are compared after removing
# their means.

# %%
fitted = params["stores"].assign(
    fitted=lambda t: t["effect"] - t["effect"].mean(),
    true=true_effect - true_effect.mean(),
)[["region", "fitted", "true"]]
fitted.round(2)

# %%
assert np.corrcoef(fitted["fitted"], fitted["true"])[0, 1] > 0.95

# %%
fig, ax = plt.subplots(figsize=(7, 3))
positions = np.arange(len(fitted))
ax.bar(positions - 0.2, fitted["true"], width=0.4, label="true")
ax.bar(positions + 0.2, fitted["fitted"], width=0.4, label="fitted")
ax.set_xticks(positions, fitted.index)
ax.set_ylabel("store effect (centred)")
ax.legend()
fig.tight_layout()
