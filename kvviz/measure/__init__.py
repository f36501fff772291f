"""Measurement's floor: what every timing shown to a class stands on. Torch-free; imports nothing of kvviz but i18n.

  cores     one rule for counting the cores a timing ran on (physical cores this process may use)
  load      one reader of the machine's load average (nan where the OS has none), and its label
  timing    one statistic: the median of repeats with their middle half, and the "inside the noise" rule
  repeats   one interleaved timing loop (a, b, a, b, ...; rotating orders; a time budget), and time_pair

The race (kvviz.step), the lesson (kvviz.teaching), the internals pages (kvviz.internals) and the speed-up
(kvviz.speedup) all measure through these modules; none of them writes its own.
"""
