"""The demo: ``python -m nodegrad``.

Fits a small classifier to Fisher's iris data (shipped in the package). The parameters
are an attrs record of records with a static field; the gradient is an instance of the
same record class; a finite-difference check verifies it before training.
"""

from __future__ import annotations

import sys
from typing import Any

import attrs
import numpy as np

import nodegrad as ng
from nodegrad.data import SPECIES, load_iris


@attrs.frozen
class Dense:
    """An affine layer ``x @ w + b``."""

    w: np.ndarray
    b: np.ndarray

    def __call__(self, x: Any) -> Any:
        return x @ self.w + self.b


@attrs.frozen
class Classifier:
    """Two dense layers with a tanh between them; ``classes`` is static metadata."""

    hidden: Dense
    out: Dense
    classes: tuple[str, ...] = ng.field(static=True)

    def logits(self, x: Any) -> Any:
        return self.out(ng.tanh(self.hidden(x)))


def init(rng: np.random.Generator, sizes: tuple[int, int, int]) -> Classifier:
    n_in, n_hidden, n_out = sizes
    return Classifier(
        hidden=Dense(rng.normal(0, 1 / np.sqrt(n_in), (n_in, n_hidden)), np.zeros(n_hidden)),
        out=Dense(rng.normal(0, 1 / np.sqrt(n_hidden), (n_hidden, n_out)), np.zeros(n_out)),
        classes=SPECIES,
    )


def loss(model: Classifier, batch: dict[str, np.ndarray]) -> Any:
    return ng.cross_entropy(model.logits(batch["x"]), batch["y"])


def accuracy(model: Classifier, batch: dict[str, np.ndarray]) -> float:
    logits = batch["x"] @ model.hidden.w + model.hidden.b
    logits = np.tanh(logits) @ model.out.w + model.out.b
    return float(np.mean(np.argmax(logits, axis=1) == batch["y"]))


def split(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    data = load_iris()
    x = data["features"]
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    order = rng.permutation(len(x))
    train, test = order[:100], order[100:]
    return {"x": x[train], "y": data["species"][train]}, {"x": x[test], "y": data["species"][test]}


def finite_difference_check(model: Classifier, batch: dict[str, np.ndarray], rng: np.random.Generator) -> float:
    """Relative error between the analytic and a central-difference directional derivative."""
    g = ng.grad(loss)(model, batch)
    direction = ng.tree.map_floats(lambda w: rng.standard_normal(w.shape), model)
    eps = 1e-6
    plus = float(loss(ng.tree.add(model, ng.tree.scale(direction, eps)), batch))
    minus = float(loss(ng.tree.add(model, ng.tree.scale(direction, -eps)), batch))
    numeric = (plus - minus) / (2 * eps)
    analytic = ng.tree.vdot(g, direction)
    return abs(analytic - numeric) / max(abs(numeric), 1e-12)


def main(steps: int = 300) -> int:
    rng = np.random.default_rng(0)
    train, test = split(rng)
    model = init(rng, (4, 16, 3))

    error = finite_difference_check(model, train, rng)
    print(
        f"gradient check (central differences, float64): relative error {error:.2e}", "PASS" if error < 1e-6 else "FAIL"
    )

    value_and_grad = ng.value_and_grad(loss)
    state = None
    bar = ng.display.progress(range(steps + 1), desc="training", leave=False)
    for step in bar:
        value, g = value_and_grad(model, train)
        if step % 50 == 0:
            # Through the bar: a plain print would land on the bar's line in a terminal.
            bar.write(f"step {step:4d}  loss {float(value):.4f}  grad norm {ng.tree.global_norm(g):.4f}")
        model, state = ng.optim.adam(model, g, state, lr=0.02)
    parts = f"hidden={type(g.hidden).__name__}, out={type(g.out).__name__}, classes={g.classes}"
    print(f"gradient type: {type(g).__name__}({parts})")
    print(f"train accuracy {accuracy(model, train):.3f}, test accuracy {accuracy(model, test):.3f}")
    return 0 if error < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
