"""Two EFA nodes (a launch template with an efa and an efa-only interface), each given an Elastic IP through its
instance id: AssociateAddress refuses an instance with several interfaces, after both nodes exist."""

import pulumi_aws as aws

template = aws.ec2.LaunchTemplate(
    "efa-template",
    image_id="ami-0abcdef1234567890",
    instance_type="p4d.24xlarge",
    network_interfaces=[
        {"device_index": 0, "interface_type": "efa", "subnet_id": "subnet-0a1b2c3d"},
        {"device_index": 1, "network_card_index": 1, "interface_type": "efa-only", "subnet_id": "subnet-0a1b2c3d"},
    ],
)
for rank in range(2):
    node = aws.ec2.Instance(f"rank{rank}", launch_template={"id": template.id, "version": "$Latest"},
                            tags={"Name": f"rank{rank}"})
    aws.ec2.Eip(f"rank{rank}-address", domain="vpc", instance=node.id)
