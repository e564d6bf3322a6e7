"""A running stack, seen from the operator's machine: ``gpulease status`` (what the instance reports in the
bucket, the cloud's view of the instance, the spend against the budget) and ``gpulease ssh`` (the connection
command for each access mode).

``target`` finds the stack (its outputs, through the Pulumi CLI or a file, and its spec when the stack file is
here), ``status`` reads what there is to read, ``view`` draws it, ``connect`` builds the commands."""
