// This is a stub lib.rs.
