"""Diagnostics for the classic queue traps: runner side, session hook, naming bad input."""
