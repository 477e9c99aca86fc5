//! The vertical format (filled in next).
