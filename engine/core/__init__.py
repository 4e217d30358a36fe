"""The foundation, importing no other engine package: param sections, seeded streams, the recorder and its tables, the event log, the Platform protocol."""
