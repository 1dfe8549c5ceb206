"""The engine: the bottom layer, which knows no particular op, no numpy dispatch and no display.

Read it top to bottom in this order:

- :mod:`~nodegrad.engine.plugins` -- the sockets the layers above plug into;
- :mod:`~nodegrad.engine.traced` -- the handle user code holds;
- :mod:`~nodegrad.engine.registry` -- what an op is: a forward and one VJP rule per input;
- :mod:`~nodegrad.engine.structure` -- records, maps and sequences: taking apart, rebuilding, key paths;
- :mod:`~nodegrad.engine.sweep` -- the reverse sweep, unbroadcasting, seeds, the missing-gradient policy;
- :mod:`~nodegrad.engine.record` -- applying an op: one node appended;
- :mod:`~nodegrad.engine.arena` -- the flat, append-only node store.
"""
