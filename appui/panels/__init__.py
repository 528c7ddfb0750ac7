"""Parts of a page with a job of their own: labelled-set runs, replays, run comparisons, the domain vote, judging."""
