"""Views of the open plan that follow the document: timeline, memory bars, Load and Fleet views."""
