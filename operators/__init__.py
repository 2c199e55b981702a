"""Fused operators written with the tensor frontend: DeepSeek-V3.2 sparse attention's Lightning Indexer and Indexer Prolog."""
