from vidload.cli import main

raise SystemExit(main())
