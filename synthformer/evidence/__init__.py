"""The experiment machinery: the grid engine, cells, statistics, tuning, speed, floors, the judging rule and Markdown tables."""
