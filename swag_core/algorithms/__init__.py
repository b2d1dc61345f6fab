"""Window structures, one module per algorithm family (see swag_core.registry)."""
