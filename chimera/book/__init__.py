"""The results book: README.md and docs/*.md rendered from runs, and the claims ledger (docs/claims.md)."""
