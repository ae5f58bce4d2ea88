"""The formats every stage and target shares, one module each: the verdict header (``verdict``), the table
artifact (``artifact``) and the results layout (``rundir``)."""
