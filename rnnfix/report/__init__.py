"""Reporting: the only place that turns results into text for people or tools."""

from rnnfix.report.formats import FORMATS, render

__all__ = ["FORMATS", "render"]
