"""Import and calibration in the studio: File ▸ Import topology… and Tools ▸ Calibration…."""

from studio.gui.calibration.hook import install
from studio.gui.calibration.panel import CalibrationPanel
from studio.gui.calibration.topo_dialog import ImportTopologyDialog

__all__ = ["CalibrationPanel", "ImportTopologyDialog", "install"]
