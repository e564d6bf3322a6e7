"""An application's infrastructure: a load balancer and an RDS database of db.r5.24xlarge, neither of which the
cost model prices: the worst case is unknown, never $0.00."""

import pulumi_aws as aws

tags = {
    "gpulease:owner": "ops@example.com", "gpulease:project": "app", "gpulease:experiment": "app",
    "gpulease:cost-center": "platform", "gpulease:budget-usd": "100", "gpulease:expires-at": "2026-12-01T16:00:00Z",
    "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "none", "gpulease:managed-by": "gpulease",
}
aws.lb.LoadBalancer("web", load_balancer_type="application", internal=True, tags=tags,
                    subnets=["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"])
aws.rds.Instance("db", engine="postgres", instance_class="db.r5.24xlarge", allocated_storage=100,
                 username="app", manage_master_user_password=True, storage_encrypted=True, skip_final_snapshot=True,
                 tags=tags)
