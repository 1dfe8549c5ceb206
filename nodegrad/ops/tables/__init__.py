"""Tables: pandas DataFrames and Series as differentiable values, with pandas' answers.

A DataFrame is a structured value like a dict, with no registration: its float and
complex columns are differentiable, every other column static, its index part of its
structure; its gradient is a DataFrame with the same index (a Series' a Series). Inside a
transform a DataFrame is a :class:`Frame` and a column a :class:`Series`, which speak
pandas and give pandas' answers: pandas itself chooses the rows of every step from the
plain values, and computes every step no differentiated value takes part in.

The rooms: :mod:`.common` (pandas on demand, rows chosen by pandas, missing values kept
apart), :mod:`.spelling` (the operators and row selectors a table and a column share),
:mod:`.series` and :mod:`.series_methods` (a column), :mod:`.reductions` (NaN-skipping
reductions on traced values), :mod:`.frame` and :mod:`.frame_arithmetic` (a table),
:mod:`.groupby`, :mod:`.joins`, :mod:`.values` (pandas objects taken apart and rebuilt by
transforms) and :mod:`.signature` (what a replay's signature holds of a table's rows).
"""

from nodegrad.ops.tables.frame import Frame
from nodegrad.ops.tables.series import Series
from nodegrad.ops.tables.values import table_of

__all__ = ["Frame", "Series", "table_of"]
