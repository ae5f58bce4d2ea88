"""The software classifier: the float model as a host behind the switch, for the † configurations."""
