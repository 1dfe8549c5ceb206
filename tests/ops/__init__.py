"""Gradient tests for the ops of ``nodegrad.ops``, one spec module per op family.

``harness.py`` defines what a spec draws (:class:`~tests.ops.harness.Case`) and what a bad
call is; ``specs_<family>.py`` hold each family's specs and bad calls; ``test_ops.py`` runs
the generic checks over all of them; ``test_behaviours.py`` pins down fixed values
(conventions at non-differentiable points, exact gradients, engine-bug reproducers).
"""
