"""Small helpers every layer uses: typed values, JSONL rows, atomic writes and manifests."""
