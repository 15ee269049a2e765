"""The parts of :class:`~studio.gui.canvas.scene.ClusterScene`, one idea each, mixed into the scene:
item synchronisation, link drawing and link kinds, palette drops."""
