"""Regenerate the embedded sample's ``annotations.jsonl``: illustrative annotation calls.

The sample's votes were written for this project, not produced by real models: the three
"annotators" (``sample_annotator_1`` … ``_3``) stand for the three LLM annotators of the paper's
protocol, each asked every item 3 times with each of the two prompts (text-only and
text+image), 18 calls per item. The judgement behind each item — its label under each prompt, the
techniques present and a rationale citing that article's wording and image — is written by hand
in :data:`NOTES`. This script spreads it over the 18 calls the way real annotators disagree:

- ``pattern="u"``: all annotators agree;
- ``pattern="s"``: one annotator dissents in one of its three samples (a sample-level 2-1);
- ``pattern="a"``: one annotator dissents in two samples, so its own majority is the other label
  (an annotator-level 2-1);
- ``pattern="tie"``: one annotator per label and one without a majority of its own, so the
  hierarchical vote flags the item (the build must leave it out until a reviewer settles it).

About 5% of calls are abstentions (a refusal in free text or a truncated answer, which do not
parse, or an answer that breaks the schema), placed only where they leave the intended outcome
unchanged. Every answer is written in the schema the annotate stage asks for and carries the
``status`` :func:`vilbias.annotate.prompts.parse_annotation` gives it; every item's outcome is
checked with :func:`vilbias.annotate.voting.hierarchical_vote`. Run::

    python tools/sample/make_annotations.py        # rewrites annotations.jsonl
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass
from pathlib import Path

from vilbias.annotate.prompts import parse_annotation
from vilbias.annotate.voting import Vote, hierarchical_vote
from vilbias.task import (
    ALL_NAMES,
    ANSWER_LABELS,
    BIASED_NAME,
    BIASED_TONE,
    LABEL_NAMES,
    MULTIMODAL_CRITERIA,
    NOT_BIASED_NAME,
    TEXT_TECHNIQUES,
    TONES,
)
from vilbias.workdir import ARTICLES, atomic_write, read_jsonl

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "src" / "vilbias" / "sample"
"""The shipped sample these scripts regenerate (a checkout's; they are not in the wheel)."""
ANNOTATIONS_FILE = "annotations.jsonl"
ANNOTATORS = ("sample_annotator_1", "sample_annotator_2", "sample_annotator_3")
SAMPLES = 3
ABSTENTION_RATE = 0.05
OTHER = {BIASED_NAME: NOT_BIASED_NAME, NOT_BIASED_NAME: BIASED_NAME}

# What a model answers when it does not answer: the store keeps the raw text; the parser finds no
# answer object in the first three (format abstentions) and an answer that breaks the schema (an
# unknown technique, an empty rationale) in the last.
UNPARSEABLE = (
    "I'm sorry, but I can't provide a bias assessment of this article.",
    '{"techniques": {"Emotional Appeal": "Present", "Exaggeration and Hyp',
    "I am unable to determine whether this content is biased without more context about the outlet.",
    '{"techniques": {"Spin": "Present"}, "tone": "Biased", "label": "biased", "rationale": ""}',
)


@dataclass(frozen=True)
class ScriptedAnswer:
    """The judgement a majority of calls give for one prompt."""

    label: str
    techniques: list[str]
    rationale: str


@dataclass(frozen=True)
class Note:
    """Hand-written judgement of one article (key: the last path segment of its URL)."""

    text: ScriptedAnswer
    multimodal: ScriptedAnswer
    pattern: str = "u"
    multimodal_pattern: str = ""
    """Defaults to ``pattern``; ``tie`` flags the text+image vote."""
    dissent: str = ""
    """Rationale of the dissenting calls; a generic one citing the headline when empty."""


NOTES: dict[str, Note] = {
    "port-alder-container-volumes-up": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "A data-led business story with the port's figures, reasons given and an analyst's caution about future demand."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text and a matching photo of the harbour.'),
        pattern="u",
    ),
    "economy-booming-under-alliance": Note(
        text=ScriptedAnswer(BIASED_NAME, ['subjectivity', 'framing', 'selective_presentation', 'omission_of_context'],
                    "The headline and framing attribute a port's quarterly rise to the governing party's plan, which the article asserts without evidence, and the analyst's warning that demand could soften is left out."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, [],
                          'The claim that the plan is working is commentary on real figures, and the busy port photo is an ordinary illustration of the terminal; the item reads as opinionated analysis rather than distorted reporting.'),
        pattern="s", multimodal_pattern="tie",
        dissent='The article reports real growth figures and quotes the port authority; attributing growth to policy is commentary, not distortion.',
    ),
    "glacier-retreat-study": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The article reports the study's findings with uncertainty ranges, notes the method and quotes an author and an independent glaciologist."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Careful, sourced text, and the glacier photo is a plain depiction of the subject.'),
        pattern="u",
    ),
    "climate-apocalypse-on-our-doorstep": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'framing', 'omission_of_context'],
                    'The article\'s "apocalypse", "bleed to death" and "point of no return" overstate a 9 percent loss, and it leaves out the study\'s uncertainty range and the scientists\' more cautious framing.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'framing', 'omission_of_context', 'visual_cues', 'use_of_symbolism'],
                          'The hyperbolic text is matched by a caption calling the glacier "dying", which turns a neutral landscape photo into a symbol of catastrophe.'),
        pattern="u",
    ),
    "eco-zealots-block-new-road": Note(
        text=ScriptedAnswer(BIASED_NAME, ['word_choice', 'emotional_appeal', 'omission_of_context', 'imbalance', 'framing', 'exaggeration'],
                    '"Eco-zealots" and "for the sake of a beetle" ridicule the objectors, and the article does not explain the legal grounds for the objection or quote anyone who supports it.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['word_choice', 'emotional_appeal', 'omission_of_context', 'imbalance', 'framing', 'exaggeration', 'visual_cues'],
                          'Mocking language frames objectors as fanatics, and a photo of gridlocked traffic is chosen to make the bypass look indispensable.'),
        pattern="u",
    ),
    "bypass-delayed-by-court-ruling": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report explains the court's reasoning, the scheme's costs and both the council's and objectors' positions without loaded language."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Even-handed text and a plain photo of the road in question.'),
        pattern="u",
    ),
    "court-convicts-port-alder-fraudster": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "A straightforward court report that gives the verdict, the charges, the defence's case and the sentencing date without adjectives or speculation."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text, and the courthouse exterior is a standard illustration for a court story.'),
        pattern="u",
    ),
    "first-time-buyers-priced-out": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The report sets out survey figures, regional differences and comments from a lender, a housebuilder and a campaigner without loaded wording.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral statistics-led text and a plain photo of new homes.'),
        pattern="s",
        dissent='The piece focuses on affordability problems and quotes a campaigner prominently, which leans slightly toward one side.',
    ),
    "soft-justice-shame": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'omission_of_context', 'framing', 'logical_fallacies'],
                    'The article calls routine bail before sentencing "soft justice" and a "shame", implies the fraudster escaped punishment, and omits that the judge warned a prison sentence was likely.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'omission_of_context', 'framing', 'logical_fallacies'],
                          'The outrage in the text ("walks free", "soft justice") misrepresents the bail decision; the courthouse photo itself is neutral, but the framing is carried by the words.'),
        pattern="a",
        dissent='Bail decisions are a legitimate subject of criticism and the article reports the conviction accurately.',
    ),
    "athletics-doping-ban": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report gives the ruling, the substance, the athlete's denial and appeal plans and the agency's statement, without judging her."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text and a generic stadium image.'),
        pattern="u",
    ),
    "new-vaccine-trial-results-published": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The article reports the trial's efficacy with confidence intervals, notes limitations such as the single season of follow-up and the company's funding of the study, and quotes an independent expert."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'The report is careful about uncertainty and funding, and the generic lab photo matches the scientific subject without exaggeration.'),
        pattern="u",
    ),
    "jab-breakthrough-ends-winter-fear": Note(
        text=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'emotional_appeal', 'word_choice', 'omission_of_context', 'selective_presentation'],
                    'Calling a 79 percent effective vaccine a "wonder jab" that will "end winter fear" is exaggeration, and the article leaves out the company funding, the single-season follow-up and the nerve condition cases reported in the trial.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'emotional_appeal', 'word_choice', 'omission_of_context', 'selective_presentation', 'visual_cues'],
                          'The text\'s "wonder jab" and "miracle" overstate the results and omit limitations, and the generic lab photo is used as a backdrop of scientific authority for claims the study does not make.'),
        pattern="u",
    ),
    "crime-wave-blamed-on-bail-reform": Note(
        text=ScriptedAnswer(BIASED_NAME, ['logical_fallacies', 'omission_of_context', 'selective_presentation', 'emotional_appeal', 'word_choice', 'imbalance'],
                    'The article links a "crime wave" to bail reform on the strength of anecdotes from victims, a post hoc argument, and leaves out the overall crime statistics and the justice ministry\'s evaluation.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['logical_fallacies', 'omission_of_context', 'selective_presentation', 'emotional_appeal', 'word_choice', 'imbalance', 'visual_cues', 'use_of_symbolism'],
                          'The text makes a causal claim without evidence, and the night-time police lights photo is used as a symbol of disorder to support the "crime wave" framing.'),
        pattern="u",
    ),
    "nuclear-plant-life-extension": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report explains the regulator's decision and conditions, and gives the operator's view alongside a campaign group's safety concerns and cost figures."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Balanced text, and the industrial photo of the plant matches the subject without alarm.'),
        pattern="u",
    ),
    "lowmarsh-flood-defences-breached": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The wire story gives river levels, numbers evacuated and official statements, and it notes both the agency's defence of its spending and residents' complaints. It avoids emotive adjectives."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'The text is factual and sourced, and the photo shows the flooded street the article describes without added dramatisation in the caption.'),
        pattern="u",
    ),
    "abandoned-lowmarsh-drowns": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'selective_presentation', 'framing', 'repetition'],
                    'Words like "ABANDONED", "drowns", "shrug" and "disgrace" frame the flood as official indifference, and the article omits the record rainfall and the agency\'s explanation that the event exceeded the design standard.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'selective_presentation', 'framing', 'repetition', 'visual_cues'],
                          'The headline\'s "ABANDONED" and repeated blame of "faceless officials" carry the story, and the flood photo is presented as proof of neglect even though it only shows the water, not any failure by officials.'),
        pattern="u",
    ),
    "central-bank-holds-rates-steady": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The wire report states the decision, the vote split and inflation figures, and includes both the bank's reasoning and an economist who wanted a cut. Its language is measured throughout."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'The article presents the decision with figures and views from both sides, and the chart image simply plots the rate history without annotation or emphasis.'),
        pattern="u",
    ),
    "mortgage-misery-as-rates-stay-high": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'selective_presentation', 'omission_of_context', 'framing'],
                    'The headline\'s "MORTGAGE MISERY" and phrases like "trapped", "sky-high" and "out-of-touch bank bosses" are hyperbolic, and the story omits that inflation fell and that three committee members voted for a cut.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'selective_presentation', 'omission_of_context', 'framing', 'visual_cues'],
                          'Emotive words such as "misery", "trapped" and "heartless" dominate the text, and the image of ordinary terraced homes is used to personalise the rate decision as a threat to families.'),
        pattern="s",
        dissent="The article's account of households struggling with repayments is a legitimate angle and it does give the rate and inflation figures.",
    ),
    "energy-bills-to-fall-in-january": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'A plain consumer story giving the new cap level, reasons and advice, with the regulator, a supplier group and a fuel poverty charity quoted.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text and a generic photo of power lines.'),
        pattern="u",
    ),
    "green-levies-blamed-for-bills": Note(
        text=ScriptedAnswer(BIASED_NAME, ['word_choice', 'omission_of_context', 'selective_presentation', 'emotional_appeal', 'logical_fallacies'],
                    'The article blames "green levies" for high bills while omitting that wholesale gas prices drive them and that the cap is falling, and uses emotive "shivering" imagery.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['word_choice', 'omission_of_context', 'selective_presentation', 'emotional_appeal', 'logical_fallacies', 'visual_cues'],
                          'Emotive text ("shivering families") and selective blame on green policies; the pylon photo is used as a symbol of the costly grid, reinforcing the framing.'),
        pattern="s",
        dissent='The article reports that bills are still high and quotes families, which is accurate, and levies are part of bills.',
    ),
    "scientists-find-new-deep-sea-species": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, [],
                    'A measured science report that says the species are "possible" new ones pending confirmation and quotes the expedition\'s leader and an independent taxonomist.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, [],
                          'Neutral text; the harbour photo of the research ship is an ordinary illustration.'),
        pattern="u",
    ),
    "teachers-strike-vote": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report sets out the union's pay demand and the government's offer with figures, and quotes the union, the education ministry and a parents' group."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Balanced sourcing in the text, and the classroom photo is a routine illustration of the subject.'),
        pattern="u",
    ),
    "militant-union-holds-children-hostage": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'framing', 'omission_of_context', 'imbalance', 'logical_fallacies'],
                    'The piece calls union leaders "militant bosses" holding exams "hostage", ignores the real-terms pay fall and vacancy figures, and quotes only the ministry and an angry parent.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'framing', 'omission_of_context', 'imbalance', 'logical_fallacies', 'visual_cues'],
                          'Labels like "militant" and "hostage" frame the ballot as an attack on children, and the photo of an empty classroom is chosen to suggest the harm of strikes before any vote has happened.'),
        pattern="u",
    ),
    "local-teachers-weigh-ballot": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The local report presents teachers on both sides of the ballot, the head teacher's budget concerns and the ministry's position, using neutral verbs and attributed quotes."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Balanced quotes in the text and a plain classroom photo make this a neutral item.'),
        pattern="s",
        dissent="The article opens with teachers' complaints about workload, which sets a sympathetic tone toward the union.",
    ),
    "fracking-ban-lifted-anger": Note(
        text=ScriptedAnswer(BIASED_NAME, ['word_choice', 'emotional_appeal', 'omission_of_context', 'imbalance', 'framing', 'exaggeration'],
                    'Phrases like "hand frackers the keys" and "poison our water" frame the policy as a giveaway and a danger, and the piece does not include the ministry\'s safety conditions or any supporting voice.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['word_choice', 'emotional_appeal', 'omission_of_context', 'imbalance', 'framing', 'exaggeration', 'visual_cues', 'use_of_symbolism'],
                          'The text is one-sided and emotive, and the smoking chimneys in the photo are used as a symbol of pollution that is not what fracking sites look like.'),
        pattern="u",
    ),
    "offshore-wind-auction-record": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The article reports the auction results with capacity and price figures and gives space to both the energy ministry and an industry critic concerned about supply chains. Claims are attributed and hedged.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Figures and opposing views are both presented, and the photo of turbines on a clear day illustrates the subject without dramatic framing.'),
        pattern="u",
    ),
    "wind-farm-blight-on-coast": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'omission_of_context', 'imbalance', 'framing', 'selective_presentation'],
                    'The article frames the auction as coastal towns being "sacrificed" to "wind giants" and quotes only opponents, leaving out the lower strike prices and the consumer savings reported elsewhere.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'omission_of_context', 'imbalance', 'framing', 'selective_presentation', 'visual_cues'],
                          'Loaded words like "sacrificed", "blight" and "carve up" frame the projects negatively, and the caption\'s "loom over" casts the turbines in the photo as a menacing presence.'),
        pattern="a",
        dissent='The article reports genuine local concerns of fishermen and residents, and local papers commonly centre such voices; it does not misstate the auction facts.',
    ),
    "knife-crime-falls-in-halvern": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The article reports the fall with context on the longer trend, quotes police and a youth charity, and notes that offences remain above pre-2019 levels.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Balanced text with caveats, though the night-time police lights photo is a little dramatic for a statistics story; overall neutral.'),
        pattern="u",
        dissent='The image of flashing police lights at night adds drama that the text does not support.',
    ),
    "terror-on-our-streets-halvern": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'selective_presentation', 'repetition'],
                    'The article calls the town a "nightmare" of "terror", repeats "blade" imagery and omits that offences fell by 11 percent, selecting only frightening anecdotes.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'selective_presentation', 'repetition', 'visual_cues', 'use_of_symbolism'],
                          'Words like "TERROR" and "nightmare" exaggerate the situation and the caption "another night of violence" frames the police-lights photo as evidence of rising danger that the figures contradict.'),
        pattern="u",
    ),
    "fuel-tax-cut-pledge-cheered-at-rally": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'selective_presentation', 'imbalance', 'omission_of_context', 'framing'],
                    'The piece calls the pledge "long-overdue relief" for "hard-pressed families" and describes the government\'s tax as a "cash grab", while quoting only rally speakers. It never mentions the revenue lost or what the tax funds.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'selective_presentation', 'imbalance', 'omission_of_context', 'framing', 'visual_cues', 'use_of_symbolism'],
                          'The text relies on loaded phrases like "cash grab" and "relief at last" and quotes only supporters, and the photo of a packed, cheering crowd with banners reinforces the impression of overwhelming public backing.'),
        pattern="u",
        dissent='The article reports a campaign pledge and quotes those who made it; enthusiasm at a rally is newsworthy and the piece does not invent facts.',
    ),
    "fusion-reactor-milestone": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The article describes the result precisely and notes that the device did not produce net energy, quoting both the team and an independent physicist on how far commercial fusion remains.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Measured text with caveats, and the lab photo fits the subject without hype.'),
        pattern="u",
    ),
    "bank-profits-rise-on-interest": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The earnings story reports profit, income sources, provisions and dividends, and includes both analyst and consumer-group reactions.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Balanced financial reporting; the chart image shows the profit series plainly.'),
        pattern="u",
    ),
    "bankers-bonanza-as-savers-robbed": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'framing', 'imbalance'],
                    'Phrases like "robbed blind", "bonanza" and "fat cats" are emotive, and the article ignores the bank\'s loan provisions, job figures and analysts\' expectation that profits will fall.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'framing', 'imbalance', 'visual_cues'],
                          'The text is loaded ("robbed blind") and the profit chart is recaptioned as "soaring profits" to dramatise a series that the original article presented neutrally.'),
        pattern="u",
    ),
    "school-meals-pilot-results": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report gives the evaluation's findings and limitations, the cost, and views from the ministry, head teachers and a budget watchdog."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral, well-caveated text and an ordinary classroom image.'),
        pattern="u",
    ),
    "sports-funding-cuts-grassroots": Note(
        text=ScriptedAnswer(BIASED_NAME, ['word_choice', 'selective_presentation', 'omission_of_context', 'framing', 'emotional_appeal', 'imbalance'],
                    'The piece contrasts "axes" and "pours millions" without giving the overall budget figures or the government\'s explanation, and quotes only club volunteers.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['word_choice', 'selective_presentation', 'omission_of_context', 'framing', 'emotional_appeal', 'imbalance', 'visual_cues'],
                          'The loaded verbs carry the one-sided framing, and an empty, neglected community pitch is chosen as the photo to symbolise abandonment.'),
        pattern="u",
    ),
    "rail-strike-halts-services": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The article reports the strike's scope, the union's and operator's positions and passenger advice, giving each side similar weight."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text; the empty tracks photo illustrates the strike plainly.'),
        pattern="u",
    ),
    "commuters-held-to-ransom-again": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'omission_of_context', 'imbalance', 'repetition'],
                    '"Held to ransom" and "greedy" frame the strike entirely against drivers, whose complaints about rest breaks are omitted, and only angry commuters are quoted.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'omission_of_context', 'imbalance', 'repetition'],
                          'The bias is in the words ("ransom", "greedy"); the shared wire photo of empty tracks is neutral and used as in the wire report.'),
        pattern="u",
        dissent="The article reports real disruption and passengers' frustration, which is the main news for commuters.",
    ),
    "city-council-approves-transit-levy": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The report gives the vote count, the levy amount and its cost per household, and quotes both the transit authority and the taxpayers\' association at similar length. Wording such as "approved" and "argued" is descriptive rather than evaluative.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'The text balances supporters and opponents of the levy with figures for each side, and the skyline photo is a generic establishing shot with no staging that favours either camp.'),
        pattern="u",
    ),
    "robot-takeover-jobs-vanish": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'logical_fallacies', 'framing'],
                    'The article\'s "scrapheap", "runs riot" and "millions" are alarmist and unsupported, and it generalises from one redundancy to a nationwide collapse without evidence, a slippery-slope argument.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'logical_fallacies', 'framing', 'visual_cues', 'use_of_symbolism'],
                          'The fear-driven text ("coming for YOUR job") is paired with an ominous dark server-room image that symbolises faceless machines replacing people.'),
        pattern="u",
    ),
    "hospital-waiting-lists-fall-for-third-month": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report balances the fall in waiting lists with remaining problems such as long emergency waits and staff shortages, quoting the health service, a doctors' union and a patients' group."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'The article gives both the improvement and the remaining pressures with figures, and the hospital exterior photo is neutral and matches the subject.'),
        pattern="u",
    ),
    "nhs-miracle-waiting-lists-tumble": Note(
        text=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'word_choice', 'selective_presentation', 'omission_of_context', 'appeal_to_authority', 'framing'],
                    'Calling a fall of about 90,000 on a list of 6.4 million a "miracle" and "tumbling" is hyperbole, and the article quotes only the health secretary while leaving out missed emergency targets and the union\'s concerns about overtime.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'word_choice', 'selective_presentation', 'omission_of_context', 'appeal_to_authority', 'framing'],
                          'The text\'s "miracle" and "tumbling" exaggerate a modest change and present only the minister\'s view; the plain hospital photo adds nothing, but the text alone carries the bias.'),
        pattern="s",
        dissent='The article reports published figures that do show a fall for three months, and praising a policy that is working is not in itself bias.',
    ),
    "ward-closures-leave-patients-in-corridors": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'selective_presentation', 'omission_of_context', 'imbalance', 'framing'],
                    'The article dismisses the falling waiting lists as "spin" and a "mirage", relies on one nurse and one union official, and does not report the figures showing a fall in year-long waits.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'selective_presentation', 'omission_of_context', 'imbalance', 'framing', 'visual_cues'],
                          'Loaded terms such as "spin", "mirage" and "abandoned in corridors" frame the story, and the photo of a waiting ambulance is chosen to suggest an emergency even though the text is about planned care figures.'),
        pattern="u",
    ),
    "solar-farm-approved-near-riverton": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report explains the decision, the capacity and the conditions, and gives space to the developer, objectors and the council's planning officer."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text and a straightforward photo of solar panels.'),
        pattern="u",
    ),
    "border-crossings-rise-in-spring": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report gives the ministry's figures, compares them with previous years and quotes both the interior ministry and a refugee charity. No loaded terms are used for migrants or officials."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'The text is balanced and sourced, and the fence photo illustrates the border crossing point without people shown in a threatening or pitiable way.'),
        pattern="u",
    ),
    "invasion-at-dunmore": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'selective_presentation', 'framing', 'logical_fallacies'],
                    'The piece uses "surge", "pours across" and "overwhelmed" for a 14 percent rise that remains below the 2022 peak, which it leaves out, and it blames arrivals for the town\'s problems without evidence.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'omission_of_context', 'selective_presentation', 'framing', 'logical_fallacies', 'visual_cues', 'use_of_symbolism'],
                          'Alarmist words like "surge", "flood" and "broken border" frame migrants as a threat, and the photo of figures massed by the fence is used to reinforce that image of an invasion.'),
        pattern="u",
    ),
    "families-wait-months-in-shelters": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'selective_presentation', 'imbalance', 'omission_of_context'],
                    'The article relies on emotive language ("forgotten", "cold", "cruel") and quotes only asylum seekers and a charity, without the ministry\'s explanation or the figures on approvals and processing capacity.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, [],
                          'Although the text leans emotive, the image is a calm, respectful portrait that matches the caption and does not add drama; taken together the item reads as human-interest reporting with attributed claims.'),
        pattern="a",
        dissent="The article gives the 11-month decision figure and quotes the ministry's plan for a new centre, so it is not one-sided.",
    ),
    "kestrel-fc-wins-cup-final": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "A straightforward match report describing both teams' chances, the shoot-out and quotes from both managers, with no partisan language."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, [],
                          'The match report is even-handed, and the stadium photo is a routine image of the venue.'),
        pattern="u",
    ),
    "glorious-kestrel-end-31-year-wait": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'subjectivity'],
                    'The report is openly celebratory, with "glorious", "legend" and "31 years of hurt", and gives little space to Halvern\'s strong first half.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, [],
                          'Sports reporting is conventionally partisan toward a local team; the enthusiasm in the words is not directional framing on a contested issue, and the stadium photo is neutral.'),
        pattern="s", multimodal_pattern="tie",
        dissent='The article is a celebratory sports report and does not frame a contested public issue; the exuberance is conventional for the genre.',
    ),
    "tech-titan-tax-dodge": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'selective_presentation', 'omission_of_context', 'imbalance', 'framing', 'logical_fallacies'],
                    'The piece calls legal tax arrangements a "dodge" by "tech titans" and compares them to nurses\' pay without giving the firms\' total tax payments or the treasury\'s view, quoting only a campaign group.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'word_choice', 'selective_presentation', 'omission_of_context', 'imbalance', 'framing', 'logical_fallacies', 'visual_cues', 'use_of_symbolism'],
                          'Loaded terms ("dodge", "titans") carry the story, and the image of gleaming corporate towers is used as a symbol of wealth set against ordinary workers.'),
        pattern="u",
    ),
    "rent-controls-proposed": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The article explains the proposed cap and presents the tenants' union, the landlords' association and an economist with competing views, with figures on rents."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Balanced text and a neutral street photo of rented homes.'),
        pattern="u",
    ),
    "rent-cap-war-on-landlords": Note(
        text=ScriptedAnswer(BIASED_NAME, ['word_choice', 'exaggeration', 'omission_of_context', 'logical_fallacies', 'imbalance', 'framing'],
                    'The piece calls the cap a "war on landlords" and claims it "will leave tenants homeless", a slippery-slope claim, while omitting the rent rise figures and the research showing mixed results.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['word_choice', 'exaggeration', 'omission_of_context', 'logical_fallacies', 'imbalance', 'framing'],
                          'The bias is in the text ("war", "homeless"); the image of ordinary terraced homes adds no extra framing.'),
        pattern="u",
    ),
    "ai-chip-plant-announced": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The report gives the investment, job numbers and subsidy, and includes concerns from environmental groups about water use alongside the company and government statements.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          "Even-handed text, and the server-room photo matches the company's business without promotional staging."),
        pattern="u",
    ),
    "unemployment-rises-slightly": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The wire report gives the official figures, wage growth and vacancy data and quotes the statistics office, an economist and a business group.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text and a plain statistical chart.'),
        pattern="u",
    ),
    "jobs-catastrophe-looms": Note(
        text=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'word_choice', 'framing', 'omission_of_context', 'logical_fallacies', 'selective_presentation'],
                    'A 0.2-point rise is called a "catastrophe", and the article blames a "tax raid" without evidence while omitting real wage growth and the statistics office\'s note on data uncertainty.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'word_choice', 'framing', 'omission_of_context', 'logical_fallacies', 'selective_presentation', 'visual_cues'],
                          'Hyperbolic text ("catastrophe", "bites"), and the chart is recaptioned "climbing" to dramatise a small change.'),
        pattern="u",
    ),
    "heatwave-warning-issued": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The wire report gives the forecast, the warning level, health advice and context on previous heatwaves, with named official sources.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral text and a photo of dry farmland that matches the weather story.'),
        pattern="u",
    ),
    "data-breach-at-health-app": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The article reports the breach's scale, what data was exposed and what was not, and quotes the company, the regulator and a security researcher without sensational language."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Factual text with multiple sources, and the generic data-centre image is an ordinary illustration.'),
        pattern="u",
    ),
    "wildfire-forces-evacuations-near-ashby": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The report gives the fire's size, evacuation numbers and the fire service's account, and notes that the cause is under investigation rather than speculating."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Factual text, and the fire photo shows the event reported, captioned descriptively.'),
        pattern="u",
    ),
    "ashby-inferno-climate-wake-up-call": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'logical_fallacies', 'omission_of_context', 'framing'],
                    'The article calls the fire an "inferno" caused by climate inaction even though the fire service said the cause was under investigation, and it leaves out that no homes were lost.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'exaggeration', 'word_choice', 'logical_fallacies', 'omission_of_context', 'framing', 'visual_cues', 'use_of_symbolism'],
                          'The text\'s "inferno" and "hell" framing is backed by a tightly cropped fire photo captioned "ablaze", used as a symbol of climate catastrophe.'),
        pattern="u",
    ),
    "builders-bank-on-shrinking-homes": Note(
        text=ScriptedAnswer(BIASED_NAME, ['word_choice', 'emotional_appeal', 'omission_of_context', 'selective_presentation', 'imbalance'],
                    'The article calls developers "greedy" and homes "rabbit hutches" and relies on one campaigner, while leaving out land and build cost data or any response from the builders.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['word_choice', 'emotional_appeal', 'omission_of_context', 'selective_presentation', 'imbalance', 'visual_cues'],
                          'The insults in the text ("greedy", "rabbit-hutch") frame the story, and the tight photo of identical small homes is used to emphasise cramped conditions.'),
        pattern="a",
        dissent='The article cites average floor areas and says homes have shrunk, which is a fair finding; the tone is strong but supported.',
    ),
    "farmers-count-cost-of-drought": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The text reports yields, rainfall figures and the ministry's support scheme, and quotes farmers and an agronomist in measured terms."),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'visual_cues', 'omission_of_context'],
                          "The text is balanced, but the photo's parched field and the caption make the crisis look universal, while the article itself notes that northern farms had normal yields; the image adds an emotive emphasis."),
        pattern="a",
        dissent='The parched field photo illustrates the drought the article describes and does not misrepresent it.',
    ),
    "social-media-ban-for-under-16s-debated": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The text lays out the bill, quotes supporters and a digital rights group, and reports mixed research evidence without taking sides.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['selective_presentation', 'visual_cues', 'framing'],
                          "The text is balanced, but the photo of young children absorbed in tablets in a classroom, captioned without context, nudges the reader toward the ban's framing of screens as harmful, a visual emphasis not matched in the text."),
        pattern="a", multimodal_pattern="tie",
        dissent='The classroom photo is a routine illustration and does not show anything harmful; the item is neutral overall.',
    ),
    "housing-starts-rise": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "A short statistical report with the official figures, a comparison with targets and a quote each from the ministry and the builders' federation."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral data-led text and a generic construction photo.'),
        pattern="u",
    ),
    "election-debate-ends-without-knockout": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    "The article summarises each leader's arguments with similar space, fact-checks claims from both sides and reports a snap poll with its margin of error."),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Even coverage of both candidates in the text, and the podium photo shows the event itself without singling out one leader.'),
        pattern="u",
    ),
    "crane-crushes-whitfield-in-debate": Note(
        text=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'word_choice', 'selective_presentation', 'omission_of_context', 'subjectivity', 'imbalance'],
                    'The article claims a "rout" and a "crushing" win while the snap poll it ignores showed a statistical tie, and it describes Whitfield as "flailing" and "rattled" while presenting Crane\'s claims without scrutiny.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['exaggeration', 'word_choice', 'selective_presentation', 'omission_of_context', 'subjectivity', 'imbalance', 'visual_cues'],
                          'Phrases like "crushes" and "flailing" show clear partisanship, and the shared debate photo is recaptioned to centre one candidate, turning a neutral event image into a victory shot.'),
        pattern="u",
    ),
    "green-union-surge-in-polls": Note(
        text=ScriptedAnswer(BIASED_NAME, ['subjectivity', 'word_choice', 'selective_presentation', 'omission_of_context', 'framing'],
                    'The piece treats a two-point poll rise as a "surge" showing voters "finally waking up", and cites only the party\'s own figures and supporters without mentioning the margin of error.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['subjectivity', 'word_choice', 'selective_presentation', 'omission_of_context', 'framing', 'visual_cues'],
                          'The partisan framing ("waking up", "tired old parties") runs through the text, and the photo of an energetic young crowd supports the story of a movement on the rise.'),
        pattern="s",
        dissent="Reporting a party's rise in polls with quotes from its supporters is normal campaign coverage.",
    ),
    "turnout-record-in-early-voting": Note(
        text=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                    'The report gives early voting numbers, compares them with the last election and quotes the electoral commission and analysts from different perspectives.'),
        multimodal=ScriptedAnswer(NOT_BIASED_NAME, ['use_of_statistics'],
                          'Neutral, well-sourced text, and the ballot box image simply illustrates voting.'),
        pattern="u",
    ),
    "suspicious-surge-in-city-votes": Note(
        text=ScriptedAnswer(BIASED_NAME, ['omission_of_context', 'word_choice', 'logical_fallacies', 'framing', 'subjectivity'],
                    'The article insinuates fraud through words like "suspicious" and "questions mount" while omitting the commission\'s statement that no complaints alleged fraud and that extra polling stations explain the rise.'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['omission_of_context', 'word_choice', 'logical_fallacies', 'framing', 'subjectivity', 'visual_cues'],
                          'Innuendo in the text ("suspicious surge") drives the story, and the image of an unattended ballot box is used to hint at tampering without any evidence.'),
        pattern="s",
        dissent="The article quotes voters' concerns and calls for transparency, which is a reasonable local angle.",
    ),
    "refugee-chef-wins-national-award": Note(
        text=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'subjectivity', 'word_choice', 'framing', 'selective_presentation'],
                    'The profile is framed as a rebuke to "doubters" of immigration, using one success story to make a general argument and describing the chef as "inspiring" and "proof".'),
        multimodal=ScriptedAnswer(BIASED_NAME, ['emotional_appeal', 'subjectivity', 'word_choice', 'framing', 'selective_presentation', 'visual_cues'],
                          'The celebratory, argumentative framing in the text is backed by a warm, flattering portrait, selected to personalise a political point about immigration.'),
        pattern="s",
        dissent='This is a human-interest profile of an award winner; warmth toward its subject is normal and it makes no false claims.',
    ),
}


def _dissent_rationale(note: Note, label: str, headline: str) -> str:
    if note.dissent:
        return note.dissent
    if label == BIASED_NAME:
        return f'The headline "{headline}" and some of the wording lean toward one reading of the events, and few opposing voices are quoted.'
    return f'Despite a strong tone, "{headline}" reports an actual development and the article attributes its claims to named people.'


def _ballots(pattern: str, label: str, rng: random.Random) -> dict[str, list[str | None]]:
    """Per-annotator sample labels realising ``pattern`` around the intended ``label``."""
    ballots = {a: [label] * SAMPLES for a in ANNOTATORS}
    other = OTHER[label]
    who = rng.choice(ANNOTATORS)
    if pattern == "s":
        ballots[who][rng.randrange(SAMPLES)] = other
    elif pattern == "a":
        keep = rng.randrange(SAMPLES)
        ballots[who] = [label if i == keep else other for i in range(SAMPLES)]
    elif pattern == "tie":
        order = list(ANNOTATORS)
        rng.shuffle(order)
        ballots[order[1]] = [other, other, label if rng.random() < 0.5 else other]
        undecided = [label, other, None]
        rng.shuffle(undecided)
        ballots[order[2]] = undecided
    elif pattern != "u":
        raise ValueError(f"unknown vote pattern {pattern!r}")
    return ballots


def _outcome(ballots: dict[str, list[str | None]]) -> tuple[str | None, bool]:
    votes = [Vote(a, i, lab) for a, labs in ballots.items() for i, lab in enumerate(labs)]
    result = hierarchical_vote(votes, ANNOTATORS)
    return result.label, result.flagged


def _raw(annotator: str, label: str, techniques: dict[str, bool], rationale: str) -> str:
    """The answer as the model would have written it under the answer schema: JSON, sometimes in
    a Markdown fence."""
    answer = {
        "techniques": {ALL_NAMES[t]: "Present" if present else "Absent" for t, present in techniques.items()},
        "tone": BIASED_TONE if label == BIASED_NAME else TONES[0],
        "label": ANSWER_LABELS[LABEL_NAMES.index(label)],
        "rationale": rationale,
    }
    body = json.dumps(answer, ensure_ascii=False)
    return f"```json\n{body}\n```" if annotator == ANNOTATORS[1] else body


def calls_for(article: dict, note: Note) -> list[dict]:
    """The 18 annotation calls of one article."""
    slug = article["url"].rstrip("/").rsplit("/", 1)[-1]
    rows = []
    for prompt, answer, names in (
        ("text", note.text, TEXT_TECHNIQUES),
        ("multimodal", note.multimodal, MULTIMODAL_CRITERIA),
    ):
        pattern = (note.multimodal_pattern or note.pattern) if prompt == "multimodal" else note.pattern
        rng = random.Random(zlib.crc32(f"{slug}/{prompt}".encode()))
        ballots = _ballots(pattern, answer.label, rng)
        intended = _outcome(ballots)
        # Abstentions go only where they leave the outcome as written in NOTES.
        for a in ANNOTATORS:
            for i in range(SAMPLES):
                if ballots[a][i] is not None and rng.random() < ABSTENTION_RATE:
                    saved, ballots[a][i] = ballots[a][i], None
                    if _outcome(ballots) != intended:
                        ballots[a][i] = saved
        expected = (None, True) if pattern == "tie" else (answer.label, False)
        if intended != expected:
            raise AssertionError(f"{slug}/{prompt}: votes give {intended}, notes say {expected}")
        for a in ANNOTATORS:
            for i, label in enumerate(ballots[a]):
                if label is None:
                    raw = rng.choice(UNPARSEABLE)
                    checked = parse_annotation(raw, prompt)
                    rows.append(dict(item_id=article["unique_id"], prompt=prompt, annotator=a, sample=i, label=None,
                                     tone=None, techniques={}, rationale="", raw=raw, status=checked.status, problem=checked.problem))
                    continue
                if label == answer.label:
                    present = set(answer.techniques)
                    rationale = answer.rationale
                    if a == ANNOTATORS[1]:
                        # This annotator writes shorter answers: its first sentence only.
                        rationale = rationale.split(". ")[0].rstrip(".") + "."
                    if rng.random() < 0.15:
                        present ^= {rng.choice(names)}  # a judgement call on one technique
                else:
                    present = {"word_choice", "selective_presentation"} if label == BIASED_NAME else set()
                    rationale = _dissent_rationale(note, label, article["headline"])
                if prompt == "text":
                    present = (present - {"tone"}) | ({"tone"} if label == BIASED_NAME else set())
                techniques = {t: t in present for t in names}
                raw = _raw(a, label, techniques, rationale)
                if parse_annotation(raw, prompt).label != label:
                    raise AssertionError(f"{slug}/{prompt}: the written answer does not parse to {label}")
                rows.append(dict(item_id=article["unique_id"], prompt=prompt, annotator=a, sample=i, label=label,
                                 tone=BIASED_TONE if label == BIASED_NAME else TONES[0], techniques=techniques,
                                 rationale=rationale, raw=raw, status="valid"))
    return rows


def main(sample_dir: Path = SAMPLE_DIR) -> int:
    articles = list(read_jsonl(sample_dir / ARTICLES))
    slugs = {a["url"].rstrip("/").rsplit("/", 1)[-1]: a for a in articles}
    missing = sorted(set(slugs) - set(NOTES))
    unknown = sorted(set(NOTES) - set(slugs))
    if missing or unknown:
        raise SystemExit(f"NOTES and articles.jsonl disagree: no note for {missing}, no article for {unknown}")
    rows = [row for a in articles for row in calls_for(a, NOTES[a["url"].rstrip("/").rsplit("/", 1)[-1]])]
    atomic_write(sample_dir / ANNOTATIONS_FILE, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    abstained = sum(r["label"] is None for r in rows)
    print(f"{len(rows)} calls for {len(articles)} articles, {abstained} abstentions ({abstained / len(rows):.1%})")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE_DIR))
