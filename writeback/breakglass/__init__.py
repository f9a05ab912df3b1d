"""Break-glass: the record and its patches (pure), and the flow that suspends, backports and resumes."""
