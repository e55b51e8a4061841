# fish completion for jws-verify
complete -c jws-verify -l root -r -F -d 'Pin CERT (a DER or PEM file, one or more certificates) as the trust anchor instead of the bundled Apple Root CA - G3. Repeatable. Given with --save, it is kept in the store (the setting trust_roots) and used by every later command on that store that gives no --root.'
complete -c jws-verify -l bundle-id -x -d 'The app\'s bundle ID that proofs must carry. Needed for a batch; with --save it sets the store\'s settings, with --db alone it is used for that check only.'
complete -c jws-verify -l product -x -d 'A product ID that unlocks the plan. Repeatable.'
complete -c jws-verify -l allow-sandbox -d 'Also accept Sandbox proofs (TestFlight, development builds). Xcode and LocalTesting proofs are never accepted.'
complete -c jws-verify -l type -x -a 'transaction renewal-info notification' -d 'What the tokens are: transaction (checked for bundle, product, environment, revocation, expiry; yields entitledUntil), renewal-info (environment only) or notification (a notification signedPayload: bundle and environment of its data). Only transactions entitle.'
complete -c jws-verify -l db -r -F -d 'Work on this store: check its kept proof (the store must exist), or keep proofs with --save (which creates it on first use).'
complete -c jws-verify -l save -d 'Verify the transactions read and, when all are valid, keep them in the store as the family\'s proof.'
complete -c jws-verify -l now -x -d 'Use TIME (RFC 3339) as the current time, for tests and replays.'
complete -c jws-verify -s q -l quiet -d 'Show no progress on standard error.'
complete -c jws-verify -s h -l help -d 'Show help information and exit.'
complete -c jws-verify -l version -d 'Show the version and exit.'
complete -c jws-verify -F
