from gpulease.cli import main

raise SystemExit(main())
