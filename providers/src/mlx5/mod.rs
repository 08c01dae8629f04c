//! mlx5 (ConnectX) provider.
