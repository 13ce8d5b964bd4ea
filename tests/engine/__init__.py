"""Tests of srh_engine."""
