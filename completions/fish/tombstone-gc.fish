# fish completion for tombstone-gc
complete -c tombstone-gc -l db -r -F -d 'The store. Created on first use.'
complete -c tombstone-gc -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c tombstone-gc -s q -l quiet -d 'Show no progress on standard error.'
complete -c tombstone-gc -s h -l help -d 'Show help information and exit.'
complete -c tombstone-gc -l version -d 'Show the version and exit.'
