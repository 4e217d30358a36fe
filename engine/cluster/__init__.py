"""The cluster: nodes as numpy columns (model), synthesized layouts (synth), real ones (importers), and the section describing it (params)."""
