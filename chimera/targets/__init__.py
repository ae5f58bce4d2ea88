"""Dataplane targets behind one interface: run a compiled artifact over the replayed packets.

``reference`` executes the integer semantics in-process (``reference.py``);
``ebpf`` and ``bmv2`` run the Mininet testbed with their own switch node in s1
(``testbed.py`` is their shared base); ``software`` is the float classifier host
for the † configurations. ``select.select_target`` picks one by name. Each
target returns one verdict per replayed packet, in replay order.
"""
