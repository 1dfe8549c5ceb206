"""The engine: the bottom layer, which knows no particular op, no numpy dispatch and no display.

Read it top to bottom in this order, the order its imports keep (each module imports only
those above it):

- :mod:`~nodegrad.engine.plugins` -- the sockets the layers above plug into;
- :mod:`~nodegrad.engine.containers` -- what a record, map or sequence is, one level at a time;
- :mod:`~nodegrad.engine.structure` -- the structure walker: flatten to leaves and a TreeDef, rebuild, key paths;
- :mod:`~nodegrad.engine.cycles` -- structures too deep or cyclic to walk, named;
- :mod:`~nodegrad.engine.levels` -- the protocol every interpreter is written on: levels, interpreted values;
- :mod:`~nodegrad.engine.traced` -- the handle user code holds while a function is differentiated;
- :mod:`~nodegrad.engine.staged` -- the value user code holds while ``replay`` records, its face
  (:mod:`~nodegrad.engine.face`), and :mod:`~nodegrad.engine.tape`, the recording it appends numpy calls to;
- :mod:`~nodegrad.engine.batched` -- the value user code holds inside ``vmap``;
- :mod:`~nodegrad.engine.shared` and :mod:`~nodegrad.engine.rows` -- values shared by a batch, row-sparse gradients;
- :mod:`~nodegrad.engine.registry` -- what an op is: a forward and one VJP rule per input;
- :mod:`~nodegrad.engine.nodes` -- what an arena holds: GradOp nodes, and the Node view;
- :mod:`~nodegrad.engine.cotangents` -- the cotangents of structured values, to and from the user's structures;
- :mod:`~nodegrad.engine.record` -- applying an op: one node appended;
- :mod:`~nodegrad.engine.guards` -- public functions that raise nodegrad's errors only, and record all-or-nothing;
- :mod:`~nodegrad.engine.whole` -- a sweep's rules on staged values, each recorded as one call;
- :mod:`~nodegrad.engine.rule_errors` -- a VJP rule's failure, as the user sees it;
- :mod:`~nodegrad.engine.sweep` -- the reverse sweep, one loop, and unbroadcasting;
- :mod:`~nodegrad.engine.backward` -- the sweep run for a transform: seeds, the missing-gradient policy;
- :mod:`~nodegrad.engine.arena` -- the flat, append-only node store;
- :mod:`~nodegrad.engine.program` -- a replay's tape compiled into one function.
"""
