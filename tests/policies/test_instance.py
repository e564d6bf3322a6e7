"""imdsv2-required and no-secrets-in-user-data."""

from __future__ import annotations

import base64
import gzip

import pytest

from policies.guardrails.instance import ASCII_FORMS, SECRET_PATTERNS, find_secrets
from tests.support.policy import (
    ALI_INSTANCE,
    AWS_INSTANCE,
    UNKNOWN,
    ali_gpu,
    analyze,
    aws_gpu,
    found,
    res,
)

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ROLE_ADVICE = ("accepted: credentials from the instance role (AWS instance profile / Alibaba RAM role) or a secrets "
               "manager, fetched at boot")


def test_imdsv1_allowed_on_aws():
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu(metadataOptions={"httpTokens": "optional"})),
                     res(LT, "lt", {"metadataOptions": {"httpTokens": "optional"}}))
    assert found(result, "imdsv2-required") == [
        ("imdsv2-required", "mandatory", "gpu",
         "Instance 'gpu' allows IMDSv1 (metadataOptions.httpTokens=optional); accepted: "
         "metadata_options={'http_tokens': 'required'}"),
        ("imdsv2-required", "mandatory", "lt",
         "LaunchTemplate 'lt' allows IMDSv1 (metadataOptions.httpTokens=optional); accepted: "
         "metadata_options={'http_tokens': 'required'}"),
    ]


def test_unset_http_tokens_is_reported_as_unset_with_what_the_service_then_does():
    # "optional" is named only when the program sets it; unset, the finding says so and what the default is.
    result = analyze(res(AWS_INSTANCE, "gpu", aws_gpu(metadataOptions=None)),
                     res(ALI_INSTANCE, "ali", ali_gpu(httpTokens=None)))
    (aws, ali) = [hit[3] for hit in found(result, "imdsv2-required")]
    assert aws.startswith("Instance 'gpu' leaves metadataOptions.httpTokens unset: EC2 then requires tokens only when "
                          "the image declares ImdsSupport v2.0")
    assert "httpTokens=optional" not in aws and aws.endswith("accepted: metadata_options={'http_tokens': 'required'}")
    assert ali.startswith("Instance 'ali' leaves httpTokens unset: its default is optional")


def test_an_instance_launched_from_a_template_leaves_metadata_to_the_template():
    lt = res(LT, "lt", {"name": "gpu-lt", "metadataOptions": {"httpTokens": "required"}})
    inst = res(AWS_INSTANCE, "gpu", aws_gpu(metadataOptions=None, launchTemplate={"name": "gpu-lt"}))
    assert found(analyze(lt, inst), "imdsv2-required") == []


def test_hop_limit_and_disabled_endpoint():
    far = aws_gpu(metadataOptions={"httpTokens": "required", "httpPutResponseHopLimit": 5})
    (hit,) = found(analyze(res(AWS_INSTANCE, "gpu", far)), "imdsv2-required")
    assert hit[3] == ("Instance 'gpu': metadataOptions.httpPutResponseHopLimit=5 lets more than 2 network hops reach "
                      "the instance credentials")
    assert found(analyze(res(AWS_INSTANCE, "gpu", far), config={"imdsv2-required": {"maxHopLimit": 8}}),
                 "imdsv2-required") == []
    off = aws_gpu(metadataOptions={"httpEndpoint": "disabled"})
    assert found(analyze(res(AWS_INSTANCE, "gpu", off)), "imdsv2-required") == []


def test_alicloud_metadata_tokens():
    (hit,) = found(analyze(res(ALI_INSTANCE, "gpu", ali_gpu(httpTokens="optional"))), "imdsv2-required")
    assert hit == ("imdsv2-required", "mandatory", "gpu",
                   "Instance 'gpu' allows metadata access without a token (httpTokens=optional); accepted: "
                   "http_tokens='required'")


@pytest.mark.parametrize(
    ("secret", "kind"),
    [
        ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "an AWS secret access key"),
        ("ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI5tQ9rXbK2mJd8vWn3pLs", "an Alibaba Cloud AccessKey id"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----",
         "a private key block"),
        ("git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x/y", "a GitHub token"),
        ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "a Hugging Face token"),
        ("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "a Weights & Biases API key"),
    ],
)
def test_secrets_in_plain_user_data(secret, kind):
    user_data = f"#!/bin/bash\nset -e\n{secret}\n"
    (hit,) = found(analyze(res(AWS_INSTANCE, "gpu", aws_gpu(userData=user_data))), "no-secrets-in-user-data")
    assert hit == ("no-secrets-in-user-data", "mandatory", "gpu",
                   f"Instance 'gpu': userData holds {kind} on line 3; {ROLE_ADVICE}")
    assert secret.split("=")[-1] not in hit[3]  # the finding never repeats the secret


def test_secrets_in_encoded_user_data():
    text = b"#cloud-config\nruncmd:\n  - echo AKIAIOSFODNN7EXAMPLE\n"
    b64 = base64.b64encode(text).decode()
    gz = base64.b64encode(gzip.compress(text)).decode()
    result = analyze(res(AWS_INSTANCE, "a", aws_gpu(userDataBase64=gz)), res(LT, "lt", {"userData": b64}),
                     res(ALI_INSTANCE, "ali", ali_gpu(userData=b64)))
    assert sorted((h[2], h[3].split(";")[0]) for h in found(result, "no-secrets-in-user-data")) == [
        ("a", "Instance 'a': userDataBase64 holds an AWS access key id on line 3"),
        ("ali", "Instance 'ali': userData holds an AWS access key id on line 3"),
        ("lt", "LaunchTemplate 'lt': userData holds an AWS access key id on line 3"),
    ]


def test_clean_and_unknown_user_data_pass_and_extra_patterns_apply():
    clean = "#cloud-config\nruncmd:\n  - python3 /opt/gpulease/watchdog.py --settings /etc/gpulease/settings.json\n"
    assert found(analyze(res(AWS_INSTANCE, "gpu", aws_gpu(userData=clean))), "no-secrets-in-user-data") == []
    assert found(analyze(res(AWS_INSTANCE, "gpu", aws_gpu(userData=UNKNOWN))), "no-secrets-in-user-data") == []
    config = {"no-secrets-in-user-data": {"extraPatterns": [r"watchdog\.py"]}}
    (hit,) = found(analyze(res(AWS_INSTANCE, "gpu", aws_gpu(userData=clean)), config=config),
                   "no-secrets-in-user-data")
    assert hit[3].startswith("Instance 'gpu': userData holds extraPatterns[0] on line 3")


KEY40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ALI30 = "Q3mT8vX2kL9pR4sW7yB1nD6fH0jZ5c"


SPELLINGS = [
    # Every spelling each expression accepts, so the literals that let a scan skip it stay necessary.
    (f"AWS_SECRET_ACCESS_KEY={KEY40}", "an AWS secret access key"),
    (f"AwsSecretAccessKey: {KEY40}", "an AWS secret access key"),
    (f"aws_secretaccess_key='{KEY40}'", "an AWS secret access key"),
    (f"ALIBABA_CLOUD_ACCESS_KEY_SECRET={ALI30}", "an Alibaba Cloud AccessKey secret"),
    (f"AccessKeySecret: {ALI30}", "an Alibaba Cloud AccessKey secret"),
    (f"access_keysecret={ALI30}", "an Alibaba Cloud AccessKey secret"),
    (f"ALICLOUD_SECRET_KEY={ALI30}", "an Alibaba Cloud AccessKey secret"),
    ("token ASIAIOSFODNN7EXAMPLE", "an AWS access key id"),
    ("LTAI5tQ9rXbK2mJd8vWn3pLs", "an Alibaba Cloud AccessKey id"),
    ("-----BEGIN RSA PRIVATE KEY-----", "a private key block"),
    ("gho_abcdefghijklmnopqrstuvwxyz0123456789", "a GitHub token"),
    ("ghs_abcdefghijklmnopqrstuvwxyz0123456789", "a GitHub token"),
    ("ghr_abcdefghijklmnopqrstuvwxyz0123456789", "a GitHub token"),
    ("ghu_abcdefghijklmnopqrstuvwxyz0123456789", "a GitHub token"),
    ("github_pat_" + "a1" * 31, "a GitHub token"),
    ("hf_" + "aB3" * 10, "a Hugging Face token"),
    ("xoxb-0123456789-abcdef", "a Slack token"),
    ("sk-proj-" + "a" * 32, "an OpenAI-style API key"),
    ("wandb_api_key = " + "0a" * 20, "a Weights & Biases API key"),
    ("pul-" + "0a" * 20, "a Pulumi access token"),
    ("AIza" + "B" * 35, "a Google API key"),
]


@pytest.mark.parametrize(("text", "kind"), SPELLINGS)
def test_each_spelling_of_each_secret_is_found(text, kind):
    assert find_secrets(f"#!/bin/bash\n{text}\n") == [f"{kind} on line 2"]


def test_every_secret_kind_has_a_spelling_above():
    assert set(SECRET_PATTERNS) == {kind for _, kind in SPELLINGS}


@pytest.mark.parametrize("name", ["AWS_\u017fECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_\u212aEY"])
def test_a_key_name_with_letters_lower_keeps_apart_is_still_scanned(name):
    # The case-insensitive expression takes "ſ" for "s" and the Kelvin sign for "k"; str.lower() does not, so a
    # text that is not ASCII is scanned with every expression instead of skipping by the literals.
    assert find_secrets(f"#!/bin/bash\n{name}={KEY40}\n") == ["an AWS secret access key on line 2"]


PLAIN_FORMS = {
    # The expressions as first written, one alternation each; SECRET_PATTERNS holds them with the first letter
    # outside it (a faster scan): both must find the same matches at the same places.
    "an AWS secret access key": r"(?i:aws_?secret_?access_?key)\s*[=:]\s*['\"]?[A-Za-z0-9/+=]{40}",
    "an Alibaba Cloud AccessKey secret":
        r"(?i:access_?key_?secret|ALIBABA_CLOUD_ACCESS_KEY_SECRET|ALICLOUD_SECRET_KEY)\s*[=:]\s*['\"]?[A-Za-z0-9]{30}",
}


def _spellings(words: list[str], rng) -> list[str]:
    """Each key name with and without each underscore, in three cases and one of random case."""
    out = []
    for joined in {"_".join(words), "".join(words), *("_".join(words[:i]) + "".join(words[i:]) for i in range(1, len(words)))}:
        out += [joined, joined.upper(), joined.title(), "".join(c.upper() if rng.random() < 0.5 else c for c in joined)]
    return out


@pytest.mark.parametrize("kind", sorted(PLAIN_FORMS))
def test_the_factored_secret_expressions_find_what_the_plain_alternations_find(kind):
    import random
    import re

    rng = random.Random(7)
    names = [*_spellings(["aws", "secret", "access", "key"], rng), *_spellings(["access", "key", "secret"], rng),
             *_spellings(["alibaba", "cloud", "access", "key", "secret"], rng), *_spellings(["alicloud", "secret", "key"], rng),
             "AWS_\u017fECRET_ACCESS_\u212aEY", "ACCESS_\u212aEY_\u017fECRET", "aaccesskeysecret", "aaws_secret_access_key"]
    values = [KEY40, ALI30, ALI30 + "x" * 10, "short"]
    texts = [f"{prefix}{name}{sep}{quote}{value}\n" for name in names for value in values
             for prefix, sep, quote in [("", "=", ""), ("  ", ": ", "'"), ("x", " = ", '"'), ("a", ":", "")]]
    texts.append("".join(texts))
    plain, factored = re.compile(PLAIN_FORMS[kind]), re.compile(SECRET_PATTERNS[kind][1])
    lowered = re.compile(ASCII_FORMS[kind])
    matched = 0
    for text in texts:
        spans = [m.span() for m in plain.finditer(text)]
        assert [m.span() for m in factored.finditer(text)] == spans, text
        if text.isascii():  # what find_secrets scans an ASCII text with: its lower-cased form
            assert [m.span() for m in lowered.finditer(text.lower())] == spans, text
        matched += bool(spans)
    assert matched > 100  # the corpus holds many matches, not only misses


def test_every_case_sensitive_form_is_of_a_case_insensitive_secret():
    assert set(ASCII_FORMS) == set(PLAIN_FORMS)
    assert all("(?i" in SECRET_PATTERNS[kind][1] and "(?i" not in form for kind, form in ASCII_FORMS.items())
