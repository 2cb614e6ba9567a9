//! The rooftop manager's console (issue 14) over real HTTP.
