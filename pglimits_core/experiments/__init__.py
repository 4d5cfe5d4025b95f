"""Experiments every workload runs the same way, written once: ``capacity`` (the ceiling, and the
highest offered rate whose p99 from the intended start holds a latency target over a steady
window). A workload supplies a design's loads as verbs; the core owns the order, the records'
names and params, the search, the steady confirmation and the table.
"""
