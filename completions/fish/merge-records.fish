# fish completion for merge-records
complete -c merge-records -l db -r -F -d 'The store. Created on first use.'
complete -c merge-records -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c merge-records -s q -l quiet -d 'Show no progress on standard error.'
complete -c merge-records -s h -l help -d 'Show help information and exit.'
complete -c merge-records -l version -d 'Show the version and exit.'
