"""The two-timescale control plane: the slow loop that re-fits the Map tables to the traffic.

The fast timescale lives in the dataplane (the EMA registers and the class prior
in the fusion, docs/pipeline.md steps 7-8). The slow loop here runs every T_cp:
it reads the EMA registers and the token sample, re-fits the length bins and
re-clusters the Map keys warm-started from the installed map, and installs a new
version of the Map tables (then one flip) only when enough recent traffic would
change centroid or bin. ``loop`` holds the decisions, ``recluster`` the fitting,
``live`` drives a switch under traffic and ``offline`` runs the same loop on the
reference with a simulated install schedule.
"""
