"""The stakeholder report: one self-contained HTML or PDF document about a plan.

:func:`~studio.service.report.report_content.gather` collects the figures (engine only),
:mod:`~studio.gui.report.charts` draws them with the GUI's own chart code offscreen, and
:func:`~studio.gui.report.writer.write_report` writes the HTML or PDF file.
"""

from studio.gui.report.writer import write_report
from studio.service.report.report_content import ReportData, gather

__all__ = ["ReportData", "gather", "write_report"]
