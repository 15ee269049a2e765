"""Project-level edits shared by the window and the command line: engine, lengths, hardware, links."""
