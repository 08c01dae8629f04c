//! rxe (Soft-RoCE) provider.
