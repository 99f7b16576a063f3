"""Where a number came from and whether it still holds: the run manifest (`manifest`,
`trajdigest`), the DVC side of the DAG (`dvcsync`, `codedeps`, `lock`), a run's state
(`status`), one number traced to its cases and artifacts (`audit`) and the whole run rebuilt
and compared (`reproduce`). Nothing here is imported by a stage except the manifest's."""
