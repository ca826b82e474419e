"""Findings: what each book page shows, computed from a results folder by tested functions.

One module per chapter. Each has a loader that reads a results folder once and returns a frozen
record of the tables and comparisons the page and its appendix show, and functions that put the
record's verdicts into the sentences the page states. The chapter displays; the words and numbers
come from here, and the unit tests check each sentence on hand-made records.
"""
