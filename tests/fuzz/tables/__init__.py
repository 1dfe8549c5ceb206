"""A differential tester of tables: random pandas pipelines, run by nodegrad, against pandas.

Each program draws a DataFrame (float columns with NaN, ints, bools, strings, categoricals,
datetimes; a RangeIndex, string labels that repeat, int labels or a named MultiIndex) and a
pipeline of pandas steps ending in a table, a Series or a number, with a scalar loss of it.
pandas runs the pipeline eagerly on the plain DataFrame: that is the oracle, and it shares no
code with nodegrad. Four checks run it under nodegrad:

``vjp``
    ``ng.vjp(pipeline, df)``'s output is pandas' own: values (floats to 1e-12 relative),
    index with its levels and names, columns, dtypes, row order.
``grad``
    ``ng.value_and_grad(loss)(df)``: the value is pandas', the gradient a DataFrame with df's
    index and float columns, equal to central differences of pandas' loss at a few entries
    (an entry where the one-sided differences part, a kink, is left out).
``vmap``
    ``ng.vmap`` of the loss of df scaled by each example's number (df itself not batched),
    and of its derivative in the number, against a loop of pandas and central differences.
``replay``
    ``ng.replay`` of the pipeline's vjp output and of the loss's value_and_grad, called on
    df, on a frame of the same structure holding other floats, and on df again.

Each run is classed: it agrees; nodegrad refuses with one of its errors naming what to do
instead (counted by the method it names); it raises a foreign exception (a KeyError, an
AttributeError, numpy's, ...) or a nodegrad error naming no remedy; or it gives a silent
difference. The last three are defects. A program pandas cannot run is never drawn (a step
pandas refuses is drawn again), and a check pandas cannot answer (on the other frame, or a
scaled one) is skipped. A defect's program is shrunk (steps, columns and rows dropped while
the same defect remains) and printed as a short script.

``python -m tests.fuzz.tables --programs N [--seed S] [--report F]``; ``--families`` and
``--without`` choose the kinds of step drawn (``programs.FAMILIES``), ``--checks`` the checks,
``--one SEED`` prints one program and its outcomes. ``tests/test_tables_differential.py`` runs
a fixed budget of it in the suite.

The rooms, each looking only at those above it:

``programs``     tables, steps and programs as data, and the source that builds them
``expressions``  the random choices, row masks and float Series a step is made of
``steps``        the steps of a pipeline by family, its tail and its loss
``drawing``      a program from its seed: ``Draw`` and ``random_program``
``outcomes``     a check's outcome; an exception classed as a refusal, unexplained or foreign
``compare``      what differs between nodegrad's answer and pandas'
``checks``       vjp, grad, vmap and replay against pandas, and ``run_check``
``shrink``       a defect's program made small, and its repro
``hunt``         a run over many seeds, and its report
``__main__``     the command line
"""
