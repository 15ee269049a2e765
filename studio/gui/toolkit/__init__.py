"""Small Qt helpers every view shares: resources, colours, plot look, layouts, PNG files, Qt fixes."""
