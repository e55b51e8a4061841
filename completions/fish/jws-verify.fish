# fish completion for jws-verify
complete -c jws-verify -l db -r -F -d 'The store. Created on first use.'
complete -c jws-verify -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c jws-verify -s q -l quiet -d 'Show no progress on standard error.'
complete -c jws-verify -s h -l help -d 'Show help information and exit.'
complete -c jws-verify -l version -d 'Show the version and exit.'
