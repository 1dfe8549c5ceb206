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
# # Property-based gradient testing with `nodegrad.testing`
#
# `check_grads` compares a function's reverse-mode gradient with central finite
# differences (the dot-product test, in float64) for any arguments, records and dicts
# included. `nodegrad.testing.strategies` draws the arguments with hypothesis.

# %%
import attrs
import numpy as np
from hypothesis import given, settings

import nodegrad as ng
from nodegrad.testing import check_grads
from nodegrad.testing.strategies import float_arrays, structures

# %% [markdown]
# ## One check
# A function of a record: the check perturbs every float leaf along a random direction.


# %%
@attrs.frozen
class Scale:
    w: np.ndarray
    shift: float


def model(p: Scale, x: np.ndarray) -> object:
    return ng.sum(ng.tanh(p.w * x + p.shift) ** 2.0)


check_grads(model, Scale(np.array([0.5, -1.0]), 0.3), np.array([1.0, 2.0]))
print("reverse and forward mode agree with central differences")

# %% [markdown]
# ## Many checks, drawn by hypothesis
# The same check over drawn arrays, and over drawn nested structures (records, dicts
# with mixed keys, lists, static leaves).


# %%
@settings(max_examples=20, deadline=None)
@given(float_arrays(bound=2.0))
def test_softplus(x: np.ndarray) -> None:
    check_grads(lambda v: ng.logaddexp(v, 0.0), x)


@settings(max_examples=20, deadline=None)
@given(structures())
def test_sum_of_squares(tree: object) -> None:
    def loss(t: object) -> object:
        # The float and complex leaves (traced or, when check_grads evaluates the function
        # on plain values, not); ints, strings, None and integer arrays are static.
        total = 0.0
        for _, leaf in ng.tree.tree_leaves_with_path(t):
            if ng.is_differentiable_leaf(leaf):
                total = total + ng.sum(leaf * leaf)
        return total

    check_grads(loss, tree)


test_softplus()
test_sum_of_squares()
print("20 drawn arrays and 20 drawn structures checked")

# %% [markdown]
# ## A wrong rule is caught
# Give `cos` a deliberately wrong gradient with `custom_vjp` (the sign of its derivative
# flipped) and the check fails with a message naming the argument and both values.


# %%
@ng.custom_vjp
def bad_cos(x: np.ndarray) -> np.ndarray:
    return np.cos(x)


bad_cos.defvjp(lambda x: (np.cos(x), x), lambda x, g: (g * np.sin(x),))  # should be -sin

try:
    check_grads(bad_cos, np.array([0.3, 1.2]))
except AssertionError as failure:
    message = str(failure)
print(message)

# %% tags=["remove-cell"]
assert "argument 0" in message and "analytic" in message and "numeric" in message
