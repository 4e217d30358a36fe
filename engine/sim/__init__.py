"""The composition: the Simulation (time, seed, inputs), scenario loading, the section and world tables, faults, the recording format."""
