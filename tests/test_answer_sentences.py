"""The offline answer's sentences: chosen by what the question asks, the answering one first."""
from __future__ import annotations

from tgr.offline.answer_sentences import QuestionShape, answer_sentences, defines

PASSAGES = [
    ("1", "Scrooge was a miser who worked late every night. Scrooge kept the fire very small."),
    ("2", "Scrooge once worked for old Fezziwig in a warehouse. Scrooge was young then and happy."),
    ("3", "Scrooge walked home through the fog. Scrooge ate his supper alone in the tavern."),
]


def test_rare_question_terms_lead_and_every_sentence_keeps_its_citation():
    picked = answer_sentences("Did Scrooge work for Fezziwig?", PASSAGES, limit=3)
    assert picked[0] == ("Scrooge once worked for old Fezziwig in a warehouse.", "2")
    assert len(picked) == 3 and all(cite in {"1", "2", "3"} for _, cite in picked)


def test_limit_dedupe_and_no_match():
    doubled = PASSAGES + [("4", PASSAGES[1][1])]
    picked = answer_sentences("Fezziwig warehouse", doubled, limit=10)
    sentences = [p[0] for p in picked]
    assert len(sentences) == len(set(sentences))
    assert picked[0][1] == "2"  # the earlier passage holds it first
    assert answer_sentences("Fezziwig warehouse", doubled, limit=1)[0] == picked[0]
    assert answer_sentences("submarine periscope", PASSAGES) == []
    assert answer_sentences("", PASSAGES) == []
    assert answer_sentences("Scrooge", []) == []


def test_who_is_x_leads_with_the_defining_sentence():
    passages = [("1", "'Bah,' said Scrooge, caustic and cold as ever. Fred, Scrooge's nephew, laughed."),
                ("2", "Ebenezer Scrooge, a grasping, covetous old man, the surviving partner of the firm of "
                      "Scrooge and Marley. Scrooge never painted out Old Marley's name.")]
    picked = answer_sentences("Who is Scrooge?", passages)
    assert picked[0] == ("Ebenezer Scrooge, a grasping, covetous old man, the surviving partner of the firm "
                         "of Scrooge and Marley.", "2")
    shape = QuestionShape.of("Who is Scrooge?")
    assert shape.defines and shape.subject == "Scrooge" and shape.asks == "person"


def test_a_restatement_of_the_question_gives_way_to_the_sentence_that_adds_the_year():
    passages = [("1", "The band was formed in Los Angeles by Lars Ulrich and James Hetfield. "
                      "Both of them were teenagers at the time."),
                ("2", "Ulrich had moved to Los Angeles with his family in 1980 and formed the band in 1981.")]
    picked = answer_sentences("In what year was the band of Lars Ulrich and James Hetfield formed in Los Angeles?",
                              passages, limit=1)
    assert picked == [("Ulrich had moved to Los Angeles with his family in 1980 and formed the band in 1981.", "2")]


def test_the_second_hop_follows_the_name_the_first_sentence_adds():
    passages = [("1", "Dick Humbert was an American football end. He played for the Philadelphia Eagles "
                      "from 1945 to 1949 as an end."),
                ("2", "The Green Bay Packers are based in Green Bay, Wisconsin."),
                ("3", "The Philadelphia Eagles are a professional American football franchise based in "
                      "Philadelphia, Pennsylvania.")]
    picked = answer_sentences("From 1945 to 1949 Dick Humbert played for a team based in what state?",
                              passages, limit=1)
    assert picked[0][1] == "1" and "Philadelphia Eagles" in picked[0][0]
    assert picked[1] == ("The Philadelphia Eagles are a professional American football franchise based in "
                         "Philadelphia, Pennsylvania.", "3")  # the hop comes on top of the limit


def test_chinese_questions():
    passages = [("1", "美猴王在花果山称王，群猴拜他为王。孙悟空住在花果山水帘洞里面的一个大石洞里。")]
    assert answer_sentences("孙悟空住在哪里？", passages)[0][0].startswith("孙悟空住在花果山水帘洞")
    # nine Chinese characters are a full sentence (about nine tokens), not noise
    assert answer_sentences("孙悟空住在哪里？", [("1", "美猴王在花果山。孙悟空住在水帘洞。")])[0][0] == "孙悟空住在水帘洞。"
    defining = [("1", "祖师道：“你是那方人氏？”须菩提祖师在灵台方寸山讲道。"),
                ("2", "那洞中有一个神仙，称名须菩提祖师。")]
    assert answer_sentences("须菩提祖师是谁？", defining)[0] == ("那洞中有一个神仙，称名须菩提祖师。", "2")
    shape = QuestionShape.of("孙悟空的师父是谁？")
    assert (shape.subject, shape.relation, shape.asks, shape.defines) == ("孙悟空", "师父", "person", False)
    # the sentence about the relation asked leads, not the one that names the subject
    named = [("1", "祖师道：与你起个法名叫做孙悟空好么？孙悟空拜须菩提祖师为师父，学得七十二般变化。")]
    assert answer_sentences("孙悟空的师父是谁？", named)[0][0] == "孙悟空拜须菩提祖师为师父，学得七十二般变化。"


def test_a_local_walks_linked_passages_each_give_their_best_sentence_sooner():
    passages = [("1", "Marley was dead to begin with. Scrooge signed the register of his burial. "
                      "Scrooge was his sole executor."),
                ("2", "The burial took place on a cold day in the City."),
                ("3", "Old Fezziwig danced with his wife.")]
    question = "Who signed the register of Marley's burial?"
    naive = answer_sentences(question, passages, limit=2)
    local = answer_sentences(question, passages, limit=2, linked=True)
    assert naive[0] == local[0] == ("Scrooge signed the register of his burial.", "1")
    assert naive[1][1] == "1" and local[1] == ("The burial took place on a cold day in the City.", "2")


def test_the_next_sentence_gives_the_question_terms_still_missing():
    # the relation word ("godfather") is in a passage whose other sentences say more of the
    # question's words; after the leading sentences the one that adds it is chosen
    passages = [("1", "The Sonata in C major for flute (BWV 1033) is a sonata in four movements. "
                      "The manuscript of the sonata is in the hand of Carl Philipp Emanuel Bach."),
                ("2", "Carl Philipp Emanuel Bach was a German musician and the son of Johann Sebastian Bach. "
                      "Carl Philipp Emanuel Bach was a German musician of the court of Berlin. "
                      "His godfather was Georg Philipp Telemann, a friend of the family."),
                ("3", "A flute sonata is a sonata for flute and piano in the Baroque period."),
                ("4", "Flute sonatas in C major were written by many German composers of the Baroque period.")]
    picked = answer_sentences("The manuscript of the flute sonata in C major, BWV 1033, is in the hand of a "
                              "German musician whose godfather is whom?", passages, limit=4)
    assert any("Georg Philipp Telemann" in sentence for sentence, _ in picked)


def test_english_terms_match_by_their_stem():
    passages = [("1", "Deltha O'Neal is a former cornerback of the Denver Broncos in the league. "
                      "He was a two-time Pro Bowl selection."),
                ("2", "The Pro Bowl is the all-star game of the league, played every winter.")]
    picked = answer_sentences("How many times was Deltha O'Neal selected for the all-star game?", passages, limit=3)
    assert any("two-time" in sentence for sentence, _ in picked)


def test_the_hop_is_a_sentence_about_the_bridge_even_when_another_scores_higher():
    passages = [("1", "Act of War is a strategy game. "
                      "The game was released in 2005 with a story written by Dale Brown, a bestselling author."),
                ("2", "Act of War is also the name of a war film about direct action."),
                ("3", "Dale Brown is an American writer known for aviation techno-thriller novels.")]
    picked = answer_sentences('What genre is the author of the story behind "Act of War" associated with?',
                              passages, limit=1)
    assert picked[1] == ("Dale Brown is an American writer known for aviation techno-thriller novels.", "3")


def test_the_last_place_goes_to_the_defining_sentence_of_a_bridge_the_answer_names():
    # the answer names Harbour Lights (the first hop) but no sentence of the question's words says
    # where they come from: the opening of the passage about them does, in place of the last sentence
    passages = [("1", "Seaglass Nights is a live album recorded at a concert in Cardiff in 1988. It was the "
                      "only live album released by the folk group Harbour Lights."),
                ("2", "Harbour Nights is a live album recorded by the singer Mary Tern in Swansea."),
                ("3", "A live album is an album of songs recorded at a concert rather than in a studio."),
                ("4", "Harbour Lights are a Welsh folk band from Tenby, on the coast of Pembrokeshire."),
                ("5", "Many groups start out by selling a live album of their first concert in their home town.")]
    question = "In what town did the group behind the live album Seaglass Nights start out?"
    picked = answer_sentences(question, passages, limit=4)
    assert len(picked) == 4 and ("It [Seaglass Nights] was the only live album released by the folk group Harbour Lights.", "1") in picked
    assert picked[-1] == ("Harbour Lights are a Welsh folk band from Tenby, on the coast of Pembrokeshire.", "4")
    # a passage that only opens with the name (a film about the band) defines no bridge
    passages[3] = ("4", "Harbour Lights on Tour is a film shot in Tenby, on the coast of Pembrokeshire.")
    assert all(cite != "4" for _, cite in answer_sentences(question, passages, limit=4))


def test_of_a_bridges_passage_the_sentence_with_a_question_term_the_answer_lacks_comes_before_its_opening():
    # the answer names Harbour Road; its passage's opening only says what it is, its next sentence
    # holds "devised", which no quoted sentence holds
    passages = [("1", "Mira Holt is a fictional character from a Welsh radio serial, voiced by Ann Lee from 1990."),
                ("2", "Tom Holt is a fictional character from the Welsh radio serial Harbour Road."),
                ("3", "Jon Holt is a fictional character from a radio serial, voiced by Ian Rees."),
                ("4", "Harbour Road is a Welsh radio serial. It was devised by the producer Gwen Parry in 1961."),
                ("5", "Sara Holt is a fictional character from a radio serial of the 1970s.")]
    picked = answer_sentences("Mira Holt is a fictional character from a radio serial devised by whom?", passages, limit=3)
    assert picked[-1] == ("It [Harbour Road] was devised by the producer Gwen Parry in 1961.", "4")
    assert ("Harbour Road is a Welsh radio serial.", "4") not in picked


def test_a_pronoun_opening_bridges_to_the_passage_its_name_opens():
    # "He" stands for the passage's subject, Paul Gross, whom another passage names
    passages = [("1", "Paul Gross is a Canadian actor and director. He is known for his lead role as "
                      "Constable Benton Fraser in the television series Due South."),
                ("2", "Benton Fraser is a fictional character in the television series Due South."),
                ("3", "Hannah Gross is a Canadian actress, the daughter of Martha Burns and Paul Gross.")]
    picked = answer_sentences('Who did the actor who starred as Constable Benton Fraser in the television series '
                              '"Due South" have a child with?', passages, limit=1)
    assert picked[1] == ("Hannah Gross is a Canadian actress, the daughter of Martha Burns and Paul Gross.", "3")


def test_a_chinese_time_question_wants_a_date():
    passages = [("1", "外交部发言人介绍了法国总统访华有关安排。这是他第二任期内首次访华。"
                      "法国总统访华的日期为4月5日至7日。")]
    assert "4月5日" in answer_sentences("法国总统访华时间？", passages, limit=1)[0][0]


def test_a_relation_question_leads_with_the_sentence_that_defines_the_person_retrieval_found():
    passages = [("1", "樵夫道：那洞中有一个神仙，称名须菩提祖师。你顺那条小路儿，向南行七八里远近。"),
                ("2", "悟空道：弟子诚心听讲，听到老师父妙音处，喜不自胜。孙悟空望师父恕罪。")]
    picked = answer_sentences("孙悟空的师父是谁？", passages, names=["须菩提祖师", "孙悟空"])
    assert picked[0] == ("樵夫道：那洞中有一个神仙，称名须菩提祖师。", "1")
    # without a person found in that relation, the sentence that speaks of it leads
    assert answer_sentences("孙悟空的师父是谁？", passages, names=["孙悟空"])[0][1] == "2"


def test_english_relation_questions_are_read_as_the_relation_of_a_name():
    asked = {"Who is Scrooge's clerk?": ("Scrooge", "clerk"),
             "Who was the clerk of Scrooge?": ("Scrooge", "clerk"),
             "Who is clerk to Scrooge?": ("Scrooge", "clerk"),
             "Who is Tiny Tim's father?": ("Tiny Tim", "father"),
             "What is the name of Scrooge's clerk?": ("Scrooge", "clerk"),
             # nested: the innermost relation, whose X is a name (a description before it skipped)
             "What is the nationality of the author of The Hobbit?": ("The Hobbit", "author"),
             "Who is the director of the 1961 film Harbour of Glass?": ("Harbour of Glass", "director")}
    for question, (subject, relation) in asked.items():
        shape = QuestionShape.of(question)
        assert (shape.subject, shape.relation, shape.defines) == (subject, relation, False), question
    # a name with "of" in it is a definition; a relation not asked after "who is" is no relation
    assert QuestionShape.of("Who was the Duke of Wellington?").defines
    assert QuestionShape.of("Who signed the register of Marley's burial?").relation is None
    assert QuestionShape.of("Who is Scrooge?").relation is None


def test_an_apposition_of_a_relation_defines_a_person():
    assert defines("Bob Cratchit, clerk to Ebenezer Scrooge.", "Bob Cratchit")
    assert defines("Fred, his nephew.", "Fred") and defines("Fred, Scrooge's nephew.", "Fred")
    assert not defines("Scrooge, in a fit of temper, left the room.", "Scrooge")
    assert not defines("Fred, his face red with cold, came in.", "Fred")


def test_an_english_relation_question_leads_with_the_sentence_that_defines_the_person_found():
    passages = [("1", "Characters in the story. Bob Cratchit, clerk to Ebenezer Scrooge. Fred, his nephew."),
                ("2", "So Martha hid herself, and in came little Bob, the father, with Tiny Tim upon his shoulder. "
                      "Tiny Tim's father loved him so.")]
    picked = answer_sentences("Who is Tiny Tim's father?", passages, names=["Bob Cratchit", "Tiny Tim"])
    assert picked[0] == ("Bob Cratchit, clerk to Ebenezer Scrooge.", "1")
    # English names come by case, not from the store: only the passages retrieval led with count
    late = [("0", "Tiny Tim's father loved him so, and Tiny Tim loved his father."), ("0b", "The night was cold.")]
    picked = answer_sentences("Who is Tiny Tim's father?", late + passages, names=["Bob Cratchit"])
    assert picked[0][0] != "Bob Cratchit, clerk to Ebenezer Scrooge."


CHAIN = [  # the question's words lead to other rivers; only the painter's birthplace leads to the answer
    ("1", "The Silver River flows through Dunmore, a market town of the northern plain, fed by three lakes. "
          "Its valley was farmed from the ninth century."),
    ("2", "Tomas Verlane (born 1950 in Kestrel Bay) is a painter of harbours and fishing boats. "
          "He studied in Lisbon and Paris."),
    ("3", "Rivers flowing through the plain: the Silver River, the Dun, the Kell, the Amber River and the Ouse."),
    ("4", "The Grey River flows through Maldon, a mill town, where a mill stood on its bank until 1902."),
    ("5", "Kestrel Bay grew around a fish market at the mouth of the Amber River."),
]


def test_a_composed_question_is_answered_along_the_chain_its_named_clause_starts():
    """"the town where X was born": X's sentence names the town, and the river sentence that
    holds the town comes with it, though others match the question's words better."""
    question = "Which river flows through the town where Tomas Verlane was born?"
    sentences = [s for s, _ in answer_sentences(question, CHAIN, limit=2)]
    assert sentences[0].startswith("The Silver River flows through Dunmore")  # the best match of its words
    anchor = sentences.index("Tomas Verlane (born 1950 in Kestrel Bay) is a painter of harbours and fishing boats.")
    assert sentences[anchor + 1] == "Kestrel Bay grew around a fish market at the mouth of the Amber River."


def test_no_chain_when_the_answer_already_names_the_anchor_or_defines():
    for asked in ("Which river flows through Dunmore?", "Who is Tomas Verlane?"):
        assert not any("Kestrel Bay grew" in s for s, _ in answer_sentences(asked, CHAIN, limit=2))


def test_a_person_answered_by_surname_alone_is_named_in_full_by_the_sentence_before():
    passages = [("1", "The study of tides began with the charts of Mara K. Ostrand in 1890. Ostrand, who was the "
                      "first director of the Harbour Survey, mapped the whole coast by boat."),
                ("2", "The Harbour Survey was founded in 1885 and measured the depth of the bay every spring.")]
    picked = [s for s, _ in answer_sentences("Who was the first director of the Harbour Survey?", passages)]
    assert picked[:2] == ["The study of tides began with the charts of Mara K. Ostrand in 1890.",
                          "Ostrand, who was the first director of the Harbour Survey, mapped the whole coast by boat."]
    asked_when = [s for s, _ in answer_sentences("When was the Harbour Survey founded?", passages)]
    assert not asked_when[0].startswith("The study of tides")  # not a person asked: no name to complete


def test_a_chain_of_three_links_goes_through_the_clause_that_names_the_bridge():
    """"the city where the makers of Harrow Lanterns were founded": the brand's sentence names
    the company, the company's sentence with the clause's word ("founded") names the city, and the
    river sentence holding the city comes last."""
    passages = [("1", "The Silver River flows through Dunmore, a market city of the northern plain. "
                      "It is fed by three lakes."),
                ("2", "Harrow Lanterns is a brand of lamps sold by the Odell Company since 1921."),
                ("3", "The Odell Company was founded in Brackwater by two tinsmiths. It later moved to Leeds."),
                ("4", "The Grey River flows through Maldon, a mill city, where a mill stood until 1902."),
                ("5", "Brackwater grew up around the ford of the Lune River, on the old salt road.")]
    question = "Which river flows through the city where the makers of Harrow Lanterns were founded?"
    sentences = [s for s, _ in answer_sentences(question, passages, limit=2)]
    brand = sentences.index("Harrow Lanterns is a brand of lamps sold by the Odell Company since 1921.")
    assert sentences[brand + 1:brand + 3] == [
        "The Odell Company was founded in Brackwater by two tinsmiths.",
        "Brackwater grew up around the ford of the Lune River, on the old salt road."]


def test_a_plural_matches_its_singular():
    """"hotel" asks for the sentence about "hotels": a plural's s is no part of the word."""
    passages = [("1", "Dunmore is a market city of the northern plain with a busy harbour and an old wool trade. "
                      "Notable hotels in Dunmore include the Gull Inn and the Harbour House."),
                ("2", "The most popular fair of the plain is held every May on the green at Maldon, where a "
                      "popular ride is the boat swing.")]
    picked = answer_sentences("Which hotel in Dunmore is the most popular?", passages, limit=1)
    assert picked[0][0] == "Notable hotels in Dunmore include the Gull Inn and the Harbour House."


def test_the_kind_asked_is_read_from_the_question_word_that_comes_first():
    assert QuestionShape.of("Who did the Dunmore team play in the final last year?").asks == "person"
    assert QuestionShape.of("Which city was the band formed in when its singer met the drummer?").asks == "place"
    assert QuestionShape.of("How many shops are in the town where the painter lived when he died?").asks == "number"
    assert QuestionShape.of("When did the mill open?").asks == "year"
    assert QuestionShape.of("谁在哪一年建了这座桥？").asks == "year"  # Chinese: the first kind it holds, as before


def test_a_pronoun_sentence_after_a_passages_opening_completes_what_the_opening_lacks():
    """The opening says who the subject is; "He was the father of ..." says what is asked of him,
    with "He" standing for the subject, and follows the opening though other passages lead."""
    passages = [("1", "Tomas Verlane (born 1950) was a painter of harbours and fishing boats from Kestrel Bay. "
                      "He was one of the best known painters of the coast in the 1970s. "
                      "He was the father of the sculptor Ilse Verlane."),
                ("2", "Kestrel Bay is a fishing town on the coast, known for its harbour painters."),
                ("3", "The sculptor Anna Brook, a painter of the coast, made the harbour statue in 1980.")]
    picked = [s for s, _ in answer_sentences("Painter Tomas Verlane is father to which sculptor?", passages, limit=3)]
    assert picked[0].startswith("Tomas Verlane (born 1950)")
    assert picked[1] == "He was the father of the sculptor Ilse Verlane."


def test_a_name_asked_by_what_noun_is_named_in_full_by_the_sentence_before():
    passages = [("1", "Mara K. Ostrand (born 1850) was a painter of the coast. Ostrand is widely known as the "
                      "most popular painter of harbours in the 1890s."),
                ("2", "Jon Ostrand was a painter of mills, little known in his lifetime.")]
    picked = [s for s, _ in answer_sentences("What painter was more popular in the 1890s, Jon or Mara Ostrand?",
                                             passages)]
    assert picked[:2] == ["Mara K. Ostrand (born 1850) was a painter of the coast.",
                          "Ostrand is widely known as the most popular painter of harbours in the 1890s."]


def test_a_chain_without_the_questions_words_hops_to_what_is_asked():
    """"Who was in charge of the region where Orvik lies?": no sentence holding the region says
    "charge"; the one holding the region and a person's name is the hop."""
    passages = [("1", "The harbour master of the region is in charge of the moorings of every boat in the bay."),
                ("2", "Orvik is a hamlet of fishermen in the Dalmark region."),
                ("3", "The Dalmark region is a land of lakes and forests on the eastern coast."),
                ("4", "Hanna Seld was the last governor of Dalmark before the reform of 2001.")]
    picked = [s for s, _ in answer_sentences("Who was in charge of the region where Orvik lies?", passages, limit=2)]
    assert "Hanna Seld was the last governor of Dalmark before the reform of 2001." in picked


def test_a_possessive_names_its_owner_where_a_chain_starts():
    """"Orla's town of birth": the chain starts at Orla's sentence, which names the town, and the
    sentence holding the town and the question's words comes with it; "'s" is no question word."""
    passages = [("1", "The tallest tower of the northern plain is a radio mast that was built in 1960."),
                ("2", "Orla Vint (born 1950 in Dunmore) is a painter of harbours and boats."),
                ("3", "The tallest tower in Dunmore is the Salt Tower, built by the wool merchants."),
                ("4", "Maldon's tower is a mill of grey stone beside the river.")]
    picked = [s for s, _ in answer_sentences("What is the tallest tower in Orla's town of birth?", passages,
                                             limit=1)]
    assert "The tallest tower in Dunmore is the Salt Tower, built by the wool merchants." in picked
    assert "s" not in QuestionShape.of("What is the tallest tower in Orla's town of birth?").terms


def test_an_english_verb_matches_its_ing_and_ed_forms():
    passages = [("1", "The Dunmore mill was built by the Odell family on the river. "
                      "Its grand opening was in 1852, with a fair on the green."),
                ("2", "The Maldon mill was built in 1790 and closed in 1901.")]
    picked = answer_sentences("When did the Dunmore mill open?", passages, limit=1)
    assert picked[0][0] == "Its grand opening was in 1852, with a fair on the green."


def test_the_hops_passage_completes_it_by_a_pronoun_too():
    """The hop is the opening of the company's passage; "It is headquartered in ..." goes on
    about the company and holds the question's word the others lack."""
    passages = [("1", "Mara Ostrand is an American lamp trade executive. "
                      "She was the chairman and chief executive of the Odell Company."),
                ("2", "The Odell Company is an American lamp maker which runs two chains of shops. "
                      "It sells oil lamps and candles. It is headquartered in Dunmore, Kestria."),
                ("3", "Harrow Holdings is a lamp holding company headquartered in Maldon, Kestria."),
                ("4", "Brook Lamps is a lamp holding company headquartered in Leeford, Kestria.")]
    question = "Mara Ostrand was the chairman of a lamp holding company headquartered in what city?"
    picked = [s for s, _ in answer_sentences(question, passages, limit=3)]
    opening = picked.index("The Odell Company is an American lamp maker which runs two chains of shops.")
    assert picked[opening + 1] == "It is headquartered in Dunmore, Kestria."


def test_a_semicolon_inside_parentheses_ends_no_sentence():
    passages = [("1", 'Orla Vint (also known as "Orla the Elder"; died 1200 near Maldon, now part of Dunmore) '
                      "was the ruling lady of the Kestrel coast."),
                ("2", "The Kestrel coast is a land of harbours and fishing towns.")]
    picked = [s for s, _ in answer_sentences("In what city did Orla Vint die?", passages)]
    assert picked[0] == ('Orla Vint (also known as "Orla the Elder"; died 1200 near Maldon, now part of Dunmore) '
                         "was the ruling lady of the Kestrel coast.")


def test_a_date_is_no_answer_to_how_many():
    """Both sentences hold the question's words and a number; only the second a count."""
    passages = [("1", "Orla Vint sold her first records on 2 May 1961 at the Dunmore fair."),
                ("2", "Orla Vint sold some 40 million records at the fairs of the coast.")]
    picked = answer_sentences("How many records has Orla Vint sold?", passages, limit=1)
    assert picked[0][0] == "Orla Vint sold some 40 million records at the fairs of the coast."
    assert QuestionShape.of("Orla Vint is a folk singer who has sold how many records?").asks == "number"


def test_a_quoted_sentence_names_whom_its_opening_pronoun_stands_for():
    passages = [
        ("1", "The Tarn Prize is an award for painters. It is given every year in Vaxholm."),
        ("2", "Mara Ellen Lind (born 1950) is a Swedish painter. She won the Tarn Prize in 1990 for her harbour scenes."),
        ("3", "Hyperkalemic periodic paralysis is a disease of horses. It was described in 1990 by vets in Vaxholm."),
    ]
    lines = [text for text, _ in answer_sentences("Which painter won the Tarn Prize in 1990?", passages)]
    assert "She [Mara Ellen Lind] won the Tarn Prize in 1990 for her harbour scenes." in lines
    # a passage that does not open by defining its whole subject lends no name
    assert all("[Hyperkalemic" not in text for text in lines)


def test_a_pronoun_right_after_its_own_passages_sentence_stays_as_written():
    passages = [("1", "Mara Ellen Lind (born 1950) is a Swedish painter from Vaxholm. "
                      "She won the Tarn Prize in 1990 for her harbour scenes.")]
    lines = [text for text, _ in answer_sentences("Which Swedish painter from Vaxholm won the Tarn Prize?", passages)]
    assert lines[:2] == ["Mara Ellen Lind (born 1950) is a Swedish painter from Vaxholm.",
                         "She won the Tarn Prize in 1990 for her harbour scenes."]
