# fish completion for pair-scan
complete -c pair-scan -l raw -d 'Print the text of every QR code found, one per line, as UTF-8, instead of the offer JSON.'
complete -c pair-scan -l bytes -d 'Write the exact bytes of every QR code found, end to end, instead of the offer JSON.'
complete -c pair-scan -l json -d 'Print every QR code found as one line of JSON: text, bytes, modes, ECI, segments, corners.'
complete -c pair-scan -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c pair-scan -s q -l quiet -d 'Show no progress on standard error.'
complete -c pair-scan -s h -l help -d 'Show help information and exit.'
complete -c pair-scan -l version -d 'Show the version and exit.'
complete -c pair-scan -F
