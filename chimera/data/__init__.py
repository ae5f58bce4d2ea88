"""Data stage: pcap ingest, flows, tokens, the normalized dataset, adapters and the generator."""
