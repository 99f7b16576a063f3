"""Where a number came from and whether it still holds: the run manifest (`manifest`,
`trajdigest`), the committed `dvc.lock` read (`lock`), one number traced to its cases and
artifacts (`audit`) and the whole run rebuilt and compared (`reproduce`). Nothing here is
imported by a stage except the manifest's."""
